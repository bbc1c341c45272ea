// A deposit address per customer (product §30): the customer's forwarder id, a deposit's statuses, what a confirmed deposit is (credit with the fees of §4, dust, held, screened) and its ledger movements; no I/O.
import { keccak_256 } from "@noble/hashes/sha3.js";
import type { FeePlan } from "./fees.ts";
import { type Address, type Bytes32, forwarderAddress } from "./forwarders.ts";
import { type Movement, merchantAccount, movement, SYSTEM_ACCOUNTS } from "./ledger.ts";
import { percentOf } from "./money.ts";
import { err, ok, type Result } from "./result.ts";
import { type TableRow, transition } from "./stateTable.ts";

/** Domain separation: no invoice id (forwarderId hashes its bare UTF-8 bytes) starts with these bytes and a NUL. */
const CUSTOMER_FORWARDER_PREFIX = "deposit-address/v1\u0000";

/** The longest customer reference a merchant may use (UTF-16 code units). */
export const MAX_CUSTOMER_REFERENCE = 200;

function lengthPrefixed(text: string): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  const out = new Uint8Array(4 + bytes.length);
  new DataView(out.buffer).setUint32(0, bytes.length);
  out.set(bytes, 4);
  return out;
}

/**
 * The forwarder id of a customer's deposit address: keccak256 of a fixed prefix then the merchant
 * id, the currency's ticker and the customer reference, each length-prefixed (4 bytes, big-endian),
 * so no two triples encode alike. The same triple is the same address on every network.
 */
export function customerForwarderId(merchantId: string, ticker: string, customer: string): Bytes32 {
  const parts = [
    new TextEncoder().encode(CUSTOMER_FORWARDER_PREFIX),
    ...[merchantId, ticker, customer].map(lengthPrefixed),
  ];
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  let hex = "0x";
  for (const b of keccak_256(all)) hex += b.toString(16).padStart(2, "0");
  return hex as Bytes32;
}

/** The customer's deposit address under the hot wallet `owner`'s factory: no private key exists for it. */
export function customerDepositAddress(owner: Address, merchantId: string, ticker: string, customer: string): Address {
  return forwarderAddress(owner, customerForwarderId(merchantId, ticker, customer));
}

/** A sender's screening (product §21): as the scanner learned it, then the screening worker; `unavailable`: no answer after the last attempt. */
export type DepositScreening = "clear" | "listed" | "pending" | "unavailable";

/** A customer reference is the merchant's own text: 1 to 200 characters, no control characters. */
export function checkCustomerReference(customer: string): Result<string, "invalid_customer"> {
  if (customer.length === 0 || customer.length > MAX_CUSTOMER_REFERENCE) {
    return err("invalid_customer", `customer is 1 to ${MAX_CUSTOMER_REFERENCE} characters`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  if (/[\u0000-\u001f\u007f]/.test(customer)) return err("invalid_customer", "customer has no control characters");
  return ok(customer);
}

export const DEPOSIT_STATUSES = [
  "pending",
  "completed",
  "aml_check",
  "blocked",
  "held",
  "refunded",
  "dust",
  "reversed",
] as const;
export type DepositStatus = (typeof DEPOSIT_STATUSES)[number];

interface DepositTransition extends TableRow<DepositStatus> {
  readonly why: string;
}

/** Every status change a deposit may make; any other is refused. */
export const DEPOSIT_TRANSITIONS: readonly DepositTransition[] = [
  { from: "pending", to: "completed", why: "confirmed, its sender clear: credited with the fees of §4" },
  { from: "pending", to: "aml_check", why: "confirmed, its sender listed or not screened: the operator decides" },
  { from: "pending", to: "held", why: "confirmed at a deactivated address: the merchant decides" },
  { from: "pending", to: "dust", why: "confirmed below the entry's minDeposit, or all fees: the operator's dust" },
  { from: "pending", to: "reversed", why: "its block was reorganised away before confirmation" },
  { from: "reversed", to: "pending", why: "the same transfer mined again on the chain that won" },
  { from: "aml_check", to: "completed", why: "the operator cleared it: credited" },
  { from: "aml_check", to: "blocked", why: "the operator blocked it: the screening account holds it" },
  { from: "held", to: "completed", why: "the merchant took it: credited" },
  { from: "held", to: "refunded", why: "the merchant sent it back by a claim link: the hold pays its refund" },
  {
    from: "refunded",
    to: "held",
    why: "its refund's claim expired or its payout failed: the hold is credited back, the merchant decides anew",
  },
];

export function depositTransition(from: DepositStatus, to: DepositStatus): DepositTransition | null {
  return transition(DEPOSIT_TRANSITIONS, from, to);
}

/** Statuses a deposit never leaves. */
export function isFinalDeposit(status: DepositStatus): boolean {
  return !DEPOSIT_TRANSITIONS.some((t) => t.from === status);
}

/** A confirmed deposit's amounts (minor units of the entry it came in). */
export interface DepositFees {
  readonly merchantFee: bigint;
  readonly networkFee: bigint;
  /** What the merchant is credited: amount less both fees. */
  readonly credit: bigint;
}

/**
 * The fees of §4 on a deposit of `amount`: the merchant fee (feePercent, rounded half up) and the
 * entry's network fee, always taken from the amount (the payer chose what to send, so nothing can
 * be added to it, whoever the plan says pays). Null when they leave nothing: the deposit is dust.
 */
export function depositFees(
  amount: bigint,
  entry: { readonly networkFeeMinor: bigint },
  plan: Pick<FeePlan, "feePercent">,
): DepositFees | null {
  const merchantFee = percentOf(amount, plan.feePercent);
  const networkFee = entry.networkFeeMinor;
  const credit = amount - merchantFee - networkFee;
  return credit > 0n ? { merchantFee, networkFee, credit } : null;
}

/** What a deposit becomes at confirmation, and why. */
export type DepositOutcome =
  | { readonly status: "completed"; readonly fees: DepositFees }
  | { readonly status: "dust" | "held" | "aml_check"; readonly fees: null };

/**
 * A confirmed deposit's outcome: below the entry's minDeposit (or worth less than its fees) it is
 * dust whatever else holds; a sender not clear goes to the operator; an inactive address holds it
 * for the merchant; else it is credited. Screening comes before the merchant's hold: blocked money
 * is never the merchant's to decide on.
 */
export function depositOutcome(input: {
  amount: bigint;
  entry: { readonly networkFeeMinor: bigint; readonly minDepositMinor?: bigint | null | undefined };
  plan: Pick<FeePlan, "feePercent">;
  screening: DepositScreening;
  active: boolean;
}): DepositOutcome {
  const fees = depositFees(input.amount, input.entry, input.plan);
  if (input.amount < (input.entry.minDepositMinor ?? 0n) || fees === null) return { status: "dust", fees: null };
  if (input.screening !== "clear") return { status: "aml_check", fees: null };
  if (!input.active) return { status: "held", fees: null };
  return { status: "completed", fees };
}

/** The merchant's deposits held for its decision (product §30): not available, not withdrawable. */
export function depositHoldAccount(merchantId: string): string {
  return `held:deposits:${merchantId}`;
}

interface DepositMoney {
  depositId: string;
  merchantId: string;
  /** The catalog entry it came in (balances are per entry, product §23). */
  currency: string;
  amount: bigint;
}

/** The credit of a deposit with its fees, from the payers' side or from the merchant's hold; once per deposit (kind `credit`). */
export function depositCreditMovement(d: DepositMoney, fees: DepositFees, from: "incoming" | "held"): Movement {
  const source = from === "held" ? depositHoldAccount(d.merchantId) : SYSTEM_ACCOUNTS.incomingPayments;
  const postings = [
    { account: source, currency: d.currency, amount: -d.amount },
    { account: merchantAccount(d.merchantId), currency: d.currency, amount: fees.credit },
  ];
  if (fees.merchantFee > 0n) {
    postings.push({ account: SYSTEM_ACCOUNTS.merchantFees, currency: d.currency, amount: fees.merchantFee });
  }
  if (fees.networkFee > 0n) {
    postings.push({ account: SYSTEM_ACCOUNTS.networkFees, currency: d.currency, amount: fees.networkFee });
  }
  return movement({
    cause: "deposit",
    causeId: d.depositId,
    kind: "credit",
    memo: `deposit ${d.depositId} credited`,
    postings,
  });
}

/** Where a confirmed deposit not credited goes: dust, the screening account (blocked) or the merchant's hold. */
export function depositParkMovement(d: DepositMoney, to: "dust" | "blocked" | "held"): Movement {
  const account =
    to === "dust"
      ? SYSTEM_ACCOUNTS.dust
      : to === "blocked"
        ? SYSTEM_ACCOUNTS.screeningHeld
        : depositHoldAccount(d.merchantId);
  return movement({
    cause: "deposit",
    causeId: d.depositId,
    kind: to,
    memo: `deposit ${d.depositId} ${to === "dust" ? "kept as dust" : to}`,
    postings: [
      { account: SYSTEM_ACCOUNTS.incomingPayments, currency: d.currency, amount: -d.amount },
      { account, currency: d.currency, amount: d.amount },
    ],
  });
}

/** A deposit as the merchant API answers it (GET /public/v1/deposits) and its events carry it. */
export interface DepositObject {
  id: string;
  depositAddressId: string;
  customer: string;
  /** The ticker of the address; `entry` is the catalog entry (the network's) it came in. */
  currency: string;
  entry: string;
  network: string;
  address: string;
  txHash: string;
  logIndex: number | null;
  fromAddress: string;
  amount: string;
  merchantFee: string | null;
  networkFee: string | null;
  /** What the merchant was credited (amount less both fees); null until credited. */
  creditedAmount: string | null;
  status: DepositStatus;
  confirmed: boolean;
  createdAt: string;
  updatedAt: string;
  /** Its latest refund by claim link (a held deposit's, product §30), whatever its end; null if never refunded. */
  refund: DepositRefundObject | null;
}

/**
 * Where a deposit's refund stands: its payer has not claimed it yet, it is being paid out, it was
 * paid, its payout failed, or its claim expired (the last two put the deposit back on hold).
 */
export type DepositRefundStatus = "awaiting_claim" | "processing" | "completed" | "failed" | "expired";

/**
 * A held deposit's refund as its deposit carries it: never a refund request object of the
 * interface (those name an invoice). The claim link is a bearer secret: only the resolve that made
 * the refund answers it, as a partial refund's creation does.
 */
export interface DepositRefundObject {
  id: string;
  status: DepositRefundStatus;
  /** What the payer receives: the deposit less the network fee the payer bears. */
  amount: string;
  networkFee: string;
  /** The payer's address, once claimed. */
  toAddress: string | null;
  claimExpiresAt: string;
  payoutProcessorStatus: string | null;
  payoutProcessorTxId: string | null;
  createdAt: string;
}
