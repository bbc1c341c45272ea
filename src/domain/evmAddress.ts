// EVM addresses as the product accepts them (product §12 Addresses): 20 bytes of hex, EIP-55 checksummed when mixed-case.
import { keccak_256 } from "@noble/hashes/sha3.js";
import { err, ok, type Result } from "./result.ts";

const SHAPE = /^0x[0-9a-fA-F]{40}$/;

/**
 * The EIP-55 form of 40 lowercase hex digits: a digit a–f is uppercased where the keccak-256 of the
 * lowercase text has a nibble ≥ 8 at the same position. (By hand rather than viem's getAddress: the
 * sandbox checks addresses too, and loading viem costs a process about 16 MiB.)
 */
export function eip55(lowerDigits: string): `0x${string}` {
  const hash = keccak_256(new TextEncoder().encode(lowerDigits));
  let out = "0x";
  for (let i = 0; i < lowerDigits.length; i++) {
    const c = lowerDigits[i] as string;
    const byte = hash[i >> 1] as number;
    const nibble = i % 2 === 0 ? byte >> 4 : byte & 0x0f;
    out += nibble >= 8 ? c.toUpperCase() : c;
  }
  return out as `0x${string}`;
}

/**
 * An address a payer or a merchant gave: all-lowercase and all-uppercase hex carry no checksum and
 * are taken as they are; mixed case is an EIP-55 checksum and must match, since a typo in a
 * checksummed address would send money nowhere. Answers the checksummed form.
 */
export function checkEvmAddress(text: string): Result<`0x${string}`, "invalid_address"> {
  if (!SHAPE.test(text)) return err("invalid_address", "an EVM address is 0x followed by 40 hexadecimal digits");
  const digits = text.slice(2);
  const checksummed = eip55(digits.toLowerCase());
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
