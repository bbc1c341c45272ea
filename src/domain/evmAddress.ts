// EVM addresses as the product accepts them (product §12 Addresses): 20 bytes of hex, EIP-55 checksummed when mixed-case.
import { getAddress } from "viem";
import { err, ok, type Result } from "./result.ts";

const SHAPE = /^0x[0-9a-fA-F]{40}$/;

/**
 * An address a payer or a merchant gave: all-lowercase and all-uppercase hex carry no checksum and
 * are taken as they are; mixed case is an EIP-55 checksum and must match, since a typo in a
 * checksummed address would send money nowhere. Answers the checksummed form.
 */
export function checkEvmAddress(text: string): Result<`0x${string}`, "invalid_address"> {
  if (!SHAPE.test(text)) return err("invalid_address", "an EVM address is 0x followed by 40 hexadecimal digits");
  const digits = text.slice(2);
  const checksummed = getAddress(`0x${digits.toLowerCase()}`);
  const uniformCase = digits === digits.toLowerCase() || digits === digits.toUpperCase();
  if (!uniformCase && checksummed !== text) {
    return err("invalid_address", "the address's mixed case is not a valid EIP-55 checksum (a typo?)");
  }
  return ok(checksummed);
}

/** The form addresses are compared and indexed in: lowercase hex. */
export function addressKey(address: string): string {
  return address.toLowerCase();
}

/**
 * A payout destination (withdrawal method, refund) in live mode: an EVM address for a crypto
 * currency (product §12 Addresses); fiat destinations are the card provider's business.
 */
export function checkPayoutDestination(
  currency: { readonly type: string },
  address: string,
): Result<string, "invalid_address"> {
  if (currency.type === "fiat") return ok(address);
  return checkEvmAddress(address);
}
