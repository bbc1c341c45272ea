// Paying with a wallet (product §28): what a catalog entry's authorization is, the typed data a payer signs for it, the checks a signed one passes before anything is sent, and its states as a table.
import type { Result } from "./result.ts";
import { err, ok } from "./result.ts";
import { transition } from "./stateTable.ts";
import {
  PERMIT2_ADDRESS,
  permitWitnessTransferFromTypes,
  receiveWithAuthorizationTypes,
} from "./walletAuthorizationAbi.ts";

/** How a catalog entry's tokens can be paid by signature: EIP-3009 with its EIP-712 domain, or Permit2. */
export type CatalogAuthorization = { kind: "eip3009"; name: string; version: string } | { kind: "permit2" };
export type AuthorizationKind = CatalogAuthorization["kind"];
/**
 * What a payer signed for an entry: the entry's kind, or for an EIP-3009 entry paid over x402
 * (product §28), `eip3009_transfer`: TransferWithAuthorization, which anyone may submit, instead
 * of ReceiveWithAuthorization; the same checks, the same submission, the same settlement.
 */
export type SignedAuthorizationKind = AuthorizationKind | "eip3009_transfer";

/** Whether the signed kind is EIP-3009's (its nonce is 32 bytes, its state is the token's `authorizationState`). */
export function isEip3009Kind(kind: SignedAuthorizationKind): kind is "eip3009" | "eip3009_transfer" {
  return kind === "eip3009" || kind === "eip3009_transfer";
}

/** The stored form of an entry's authorization (currencies.wallet_authorization). */
export function serializeCatalogAuthorization(a: CatalogAuthorization | null): string | null {
  return a === null ? null : JSON.stringify(a);
}

export function parseCatalogAuthorization(text: string | null | undefined): CatalogAuthorization | null {
  if (text === null || text === undefined) return null;
  const a = JSON.parse(text) as CatalogAuthorization;
  if (a.kind === "eip3009") return { kind: "eip3009", name: a.name, version: a.version };
  return { kind: "permit2" };
}

/** What the payer signs, but for the fields the payer's wallet adds (its address, a fresh nonce). */
export interface AuthorizationTerms {
  chainId: number;
  token: string;
  /** The hot wallet: the EIP-3009 `to`, Permit2's `spender`. */
  hotWallet: string;
  /** The amount due, in the entry's own units. */
  value: bigint;
  /** Unix seconds after which the signature is no longer valid: the invoice's expiry. */
  validBefore: bigint;
  invoiceId: string;
}

/** The typed data of GET /pay/{id}/status (`networks[].authorization`), values as decimal strings. */
export function typedDataFor(authorization: CatalogAuthorization, t: AuthorizationTerms) {
  if (authorization.kind === "eip3009") {
    return {
      kind: "eip3009" as const,
      typedData: {
        domain: {
          name: authorization.name,
          version: authorization.version,
          chainId: t.chainId,
          verifyingContract: t.token,
        },
        types: receiveWithAuthorizationTypes,
        primaryType: "ReceiveWithAuthorization" as const,
        message: { to: t.hotWallet, value: t.value.toString(), validAfter: "0", validBefore: t.validBefore.toString() },
      },
    };
  }
  return {
    kind: "permit2" as const,
    permit2: PERMIT2_ADDRESS,
    token: t.token,
    amount: t.value.toString(),
    typedData: {
      domain: { name: "Permit2", chainId: t.chainId, verifyingContract: PERMIT2_ADDRESS },
      types: permitWitnessTransferFromTypes,
      primaryType: "PermitWitnessTransferFrom" as const,
      message: {
        permitted: { token: t.token, amount: t.value.toString() },
        spender: t.hotWallet,
        deadline: t.validBefore.toString(),
        witness: { id: t.invoiceId },
      },
    },
  };
}

/** A payer's signed authorization as posted, its numbers parsed. */
export interface SignedAuthorization {
  kind: SignedAuthorizationKind;
  from: string;
  signature: string;
  /** EIP-3009: 0x and 64 hex digits; Permit2: a uint256 in decimal. */
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
}

/** Why a signed authorization is refused: each a stable problem code (product §28). */
export type AuthorizationRefusal =
  | "authorization_unsupported"
  | "authorization_signature"
  | "authorization_value"
  | "authorization_window"
  | "authorization_nonce_used"
  | "authorization_balance"
  | "authorization_allowance";

/** Seconds a signature must still be valid for when it is posted: time for the hot wallet to get it mined. */
export const MIN_WINDOW_SECONDS = 120n;

/**
 * The window check: open now (`validAfter` passed), and still open long enough to be mined, and
 * closing no later than the terms offered (the invoice's expiry): a payer's signature that outlives
 * the invoice could be submitted for an invoice that no longer takes it.
 */
export function checkWindow(
  signed: Pick<SignedAuthorization, "validAfter" | "validBefore">,
  terms: Pick<AuthorizationTerms, "validBefore">,
  nowSeconds: bigint,
): Result<true, AuthorizationRefusal> {
  if (signed.validAfter >= nowSeconds) return err("authorization_window", "it is not valid yet");
  if (signed.validBefore > terms.validBefore)
    return err("authorization_window", "it stays valid after the invoice expires");
  if (signed.validBefore < nowSeconds + MIN_WINDOW_SECONDS)
    return err("authorization_window", "it expires too soon to be submitted");
  return ok(true);
}

/** A stored authorization's life: accepted, submitted by the hot wallet, then settled, failed or expired. */
export const WALLET_AUTHORIZATION_STATES = [
  "accepted",
  "submitted",
  "contested",
  "settled",
  "failed",
  "expired",
] as const;
export type WalletAuthorizationState = (typeof WALLET_AUTHORIZATION_STATES)[number];

export interface WalletAuthorizationTransition {
  readonly from: WalletAuthorizationState;
  readonly to: WalletAuthorizationState;
  readonly why: string;
}

/** Every allowed move of a stored authorization, and why; the store asserts each write against it. */
export const WALLET_AUTHORIZATION_TRANSITIONS: readonly WalletAuthorizationTransition[] = [
  { from: "accepted", to: "submitted", why: "the hot wallet signed its submission and stored it in the outbox" },
  {
    from: "accepted",
    to: "failed",
    why: "its submission would revert (the payer moved the tokens, or used or cancelled the nonce): nothing is sent",
  },
  {
    from: "accepted",
    to: "expired",
    why: "its window closed before it was submitted: the invoice stays payable by transfer",
  },
  {
    from: "submitted",
    to: "settled",
    why: "the submission is deep and succeeded: the tokens are the hot wallet's and the payment is recorded",
  },
  {
    from: "submitted",
    to: "failed",
    why: "the submission is deep and reverted (the payer moved the tokens, or cancelled)",
  },
  {
    from: "submitted",
    to: "accepted",
    why: "a transaction the service did not store took the submission's nonce: submitted again while its window is open",
  },
  {
    from: "accepted",
    to: "contested",
    why: "a TransferWithAuthorization's submission would revert: another's transaction may already have moved the tokens to the hot wallet with it; the chain is searched for that transfer",
  },
  {
    from: "submitted",
    to: "contested",
    why: "a TransferWithAuthorization's submission reverted: anyone may submit it, so another's transaction may have moved the tokens to the hot wallet first; the chain is searched for that transfer",
  },
  {
    from: "contested",
    to: "settled",
    why: "another's transaction moved the payer's tokens to the hot wallet with this authorization: recorded as the invoice's payment at that transfer",
  },
  {
    from: "contested",
    to: "failed",
    why: "no transfer of its tokens to the hot wallet was found: the payer cancelled or moved them",
  },
];

export function mayMoveAuthorization(from: WalletAuthorizationState, to: WalletAuthorizationState): boolean {
  return transition(WALLET_AUTHORIZATION_TRANSITIONS, from, to) !== null;
}
