// Double-entry ledger rules: a movement is a set of postings that sums to zero per currency.
import { assert, err, ok, type Result } from "./result.ts";

/** What caused a movement; every balance change names one. */
export type LedgerCause =
  | "adjustment"
  | "invoice"
  | "withdrawal"
  | "refund"
  | "sweep"
  | "flush"
  | "nonce_fill"
  | "dispute"
  | "card_fee"
  | "factory_deployment"
  | "wallet_submission"
  /** A deposit to a customer's deposit address (product §30). */
  | "deposit"
  /** The operator's recovery of a stray payment at a forwarder (issue 50), and its return. */
  | "stray_recovery";

/**
 * Accounts are strings. Merchant accounts hold what a merchant may withdraw and can never go
 * negative; the other accounts are the outside world's side of each movement and may.
 */
export function merchantAccount(merchantId: string): string {
  return `merchant:${merchantId}`;
}

export const SYSTEM_ACCOUNTS = {
  /** Counterpart of operator adjustments (money the operator put in or took out). */
  operatorAdjustments: "operator:adjustments",
  /** Money received from payers, on-chain or by card. */
  incomingPayments: "external:incoming_payments",
  /** Money sent out by payouts (withdrawals and refunds). */
  payouts: "external:payouts",
  /** The service's revenue from merchant fees. */
  merchantFees: "revenue:merchant_fees",
  /** Network and other fees paid on behalf of the merchant. */
  networkFees: "external:network_fees",
  /** Currency conversion desk: balances each currency leg of an autoconverted settlement. */
  conversion: "external:conversion",
  /** The operator's own money spent on chain fees it bears (gas of sweeps and of live payouts, product §12). */
  operatorNetworkFees: "operator:network_fees",
  /** The operator's own money spent on the card provider's fees (product §20): never the merchant's. */
  operatorCardFees: "operator:card_fees",
  /** The card provider, which keeps its fee out of what it settles to the operator. */
  cardProvider: "external:card_provider",
  /** Gas paid to the chain's validators. */
  chainGas: "external:chain_gas",
  /** Payments screening blocked (product §21): never the merchant's, never sent back to the listed sender. */
  screeningHeld: "operator:screening_held",
  /** Units of a payment beyond its currency's precision (product §23): the operator's. */
  dust: "operator:dust",
} as const;

/**
 * What a card dispute holds of a merchant's money until it closes (product §20): not available,
 * not withdrawable, and deliberately not a `merchant:` account.
 */
export function disputeHoldAccount(merchantId: string): string {
  return `held:disputes:${merchantId}`;
}

/**
 * What a merchant's payouts awaiting approval hold (product §31): debited from the merchant, not yet
 * paid out; released to the payouts account once approved, credited back once rejected.
 */
export function payoutApprovalHoldAccount(merchantId: string): string {
  return `held:payout_approvals:${merchantId}`;
}

/**
 * What a merchant owes the operator because its balance could not cover a dispute's hold: the
 * operator fronted it. A debit balance here is the operator's receivable.
 */
export function disputeReceivableAccount(merchantId: string): string {
  return `operator:receivables:${merchantId}`;
}

/**
 * Stray payments the operator recovered from forwarders on `network` to the hot wallet (issue 50):
 * nobody's balance, held by the operator until returned to the sender (then debited to the payouts).
 */
export function strayFundsAccount(network: string): string {
  return `operator:stray:${network}`;
}

export function isMerchantAccount(account: string): boolean {
  return account.startsWith("merchant:");
}

export interface Posting {
  readonly account: string;
  readonly currency: string;
  /** Signed minor units: positive credits the account, negative debits it. */
  readonly amount: bigint;
}

export interface Movement {
  readonly cause: LedgerCause;
  readonly causeId: string;
  /** Distinguishes several movements of one cause (a debit and its reversal); unique per cause. */
  readonly kind: string;
  readonly memo: string | null;
  readonly postings: readonly Posting[];
}

/** Builds a movement, refusing (throwing) one that does not balance: that is always a bug. */
export function movement(fields: Movement): Movement {
  assert(fields.postings.length >= 2, "a movement has at least two postings");
  const sums = new Map<string, bigint>();
  for (const posting of fields.postings) {
    assert(posting.amount !== 0n, "a posting moves a non-zero amount");
    sums.set(posting.currency, (sums.get(posting.currency) ?? 0n) + posting.amount);
  }
  for (const [currency, sum] of sums) {
    assert(sum === 0n, `movement ${fields.cause}/${fields.causeId}/${fields.kind} sums to ${sum} in ${currency}`);
  }
  return fields;
}

/** The balance an account would have after a posting; a merchant account may not go below zero. */
export function nextBalance(account: string, current: bigint, delta: bigint): Result<bigint, "insufficient_balance"> {
  const next = current + delta;
  if (next < 0n && isMerchantAccount(account)) return err("insufficient_balance");
  return ok(next);
}

/** Transfer of `amount` from one account to another in one currency. */
export function transfer(from: string, to: string, currency: string, amount: bigint): Posting[] {
  assert(amount > 0n, "a transfer moves a positive amount");
  return [
    { account: from, currency, amount: -amount },
    { account: to, currency, amount },
  ];
}
