// EIP-681 payment URIs for the payer's page (product §13): what a wallet scans to pay an invoice.
import { assert } from "./result.ts";

/**
 * Chain ids by catalog network. Live invoices use the network's main chain. Sandbox invoices carry
 * addresses nobody holds keys for, so their URIs name Sepolia, a test chain whose coins have no value:
 * a payer who scans a sandbox QR code with a real wallet cannot send real money to it. A network with
 * no known chain id gets no URI at all (the page then shows the address only): a URI without a chain
 * id would let the wallet pick whatever chain it is on.
 */
const CHAIN_IDS: Readonly<Record<string, { live: number; sandbox: number }>> = {
  ethereum: { live: 1, sandbox: 11155111 },
  // Base and its test chain, Base Sepolia (a currency on several networks, product §23).
  base: { live: 8453, sandbox: 84532 },
};

export function chainIdOf(network: string, sandbox: boolean): number | null {
  const ids = CHAIN_IDS[network];
  if (ids === undefined) return null;
  return sandbox ? ids.sandbox : ids.live;
}

export interface PaymentUriInput {
  /** 0x address the payer sends to. */
  address: string;
  chainId: number;
  /** ERC-20 contract, or null for the chain's native coin. */
  contractAddress: string | null;
  /** In the currency's smallest unit (wei for ether). */
  amountMinor: bigint;
}

/**
 * `ethereum:<token>@<chainId>/transfer?address=<to>&uint256=<amount>` for a token,
 * `ethereum:<to>@<chainId>?value=<wei>` for the native coin. Amounts are plain integers (no exponent
 * form) because wallets disagree on parsing `2.014e18`.
 */
export function paymentUri(input: PaymentUriInput): string {
  assert(input.amountMinor >= 0n, "a payment URI amount is never negative");
  if (input.contractAddress !== null) {
    return `ethereum:${input.contractAddress}@${input.chainId}/transfer?address=${input.address}&uint256=${input.amountMinor}`;
  }
  return `ethereum:${input.address}@${input.chainId}?value=${input.amountMinor}`;
}

/**
 * A deposit address's URI (product §30): no amount, the payer chooses what to send.
 * `ethereum:<token>@<chainId>/transfer?address=<to>` for a token, `ethereum:<to>@<chainId>` for the native coin.
 */
export function depositUri(input: Omit<PaymentUriInput, "amountMinor">): string {
  if (input.contractAddress !== null) {
    return `ethereum:${input.contractAddress}@${input.chainId}/transfer?address=${input.address}`;
  }
  return `ethereum:${input.address}@${input.chainId}`;
}
