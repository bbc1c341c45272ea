// Agents paying over HTTP 402 (product §28): the x402 facilitator's protocol as rules: CAIP-2 networks, the protocol's reason strings for our refusals, and the invoice an x402 payment becomes.
import type { AuthorizationRefusal } from "./walletAuthorization.ts";

/** The protocol version served (x402 v2) and its one scheme here: `exact`, EIP-3009 on EVM networks. */
export const X402_VERSION = 2;
export const X402_SCHEME = "exact";

/** A settle not mined in this long answers `settlement_pending`: the outbox finishes it from the chain later. */
export const SETTLE_WAIT_MS = 30_000;

/**
 * Longest window a payment may ask for (`maxTimeoutSeconds`): its invoice expires an hour after
 * the window, well within the 30 days an invoice may run.
 */
export const MAX_TIMEOUT_SECONDS = 86_400;

/** Seconds an x402 client's clock may run ahead of ours when it sets `validBefore` (now + maxTimeoutSeconds). */
export const CLOCK_SKEW_SECONDS = 60;

/** The invoice stays open this long after the authorization's window: it is mined before the window closes, confirmed after. */
export const INVOICE_GRACE_SECONDS = 3_600n;

/** The x402 reason strings (`invalidReason`, `errorReason`) this facilitator answers, as @x402/evm's exact scheme spells them. */
export const X402_REASONS = {
  invalidPayload: "invalid_payload",
  invalidVersion: "invalid_x402_version",
  unsupportedScheme: "unsupported_scheme",
  invalidNetwork: "invalid_network",
  networkMismatch: "invalid_exact_evm_network_mismatch",
  notEip3009: "invalid_exact_evm_eip3009_not_supported",
  missingDomain: "invalid_exact_evm_missing_eip712_domain",
  nameMismatch: "invalid_exact_evm_token_name_mismatch",
  versionMismatch: "invalid_exact_evm_token_version_mismatch",
  recipientMismatch: "invalid_exact_evm_recipient_mismatch",
  signature: "invalid_exact_evm_signature",
  validBefore: "invalid_exact_evm_payload_authorization_valid_before",
  validAfter: "invalid_exact_evm_payload_authorization_valid_after",
  value: "invalid_exact_evm_authorization_value",
  nonceUsed: "invalid_exact_evm_nonce_already_used",
  balance: "invalid_exact_evm_insufficient_balance",
  simulationFailed: "invalid_exact_evm_transaction_simulation_failed",
  transactionFailed: "invalid_exact_evm_transaction_failed",
  settlementPending: "settlement_pending",
  settleRefused: "unexpected_settle_error",
} as const;
export type X402Reason = (typeof X402_REASONS)[keyof typeof X402_REASONS];

/** The CAIP-2 id of an EVM chain, as x402 v2 names networks. */
export function caip2Of(chainId: number): `eip155:${number}` {
  return `eip155:${chainId}`;
}

/** The chain id of a CAIP-2 `eip155:<chainId>` network; null: not an EVM network. */
export function chainIdOfCaip2(network: string): number | null {
  const match = /^eip155:([1-9][0-9]{0,15})$/.exec(network);
  return match === null ? null : Number(match[1]);
}

/**
 * The protocol's reason for one of the pay-with-wallet checks' refusals (the same checks, product
 * §28). A window refused because it has not opened is `valid_after`; every other, `valid_before`.
 */
export function reasonOfRefusal(refusal: AuthorizationRefusal, notYetValid: boolean): X402Reason {
  switch (refusal) {
    case "authorization_window":
      return notYetValid ? X402_REASONS.validAfter : X402_REASONS.validBefore;
    case "authorization_signature":
      return X402_REASONS.signature;
    case "authorization_value":
      return X402_REASONS.value;
    case "authorization_nonce_used":
      return X402_REASONS.nonceUsed;
    case "authorization_balance":
      return X402_REASONS.balance;
    case "authorization_unsupported":
      return X402_REASONS.notEip3009;
    case "authorization_allowance":
      return X402_REASONS.invalidPayload;
  }
}

/**
 * The idempotency key of the invoice an x402 payment becomes: the authorization's replay key, so
 * every settle of one payload, in parallel or after a crash, finds the one invoice.
 */
export function x402InvoiceKey(key: { network: string; token: string; from: string; nonce: string }): string {
  return `x402:${key.network}:${key.token.toLowerCase()}:${key.from.toLowerCase()}:${key.nonce.toLowerCase()}`;
}

/** When the invoice of an authorization valid until `validBefore` (unix seconds) expires, as RFC 3339. */
export function x402InvoiceExpiry(validBefore: bigint): string {
  return new Date(Number((validBefore + INVOICE_GRACE_SECONDS) * 1000n)).toISOString();
}
