// How incoming payments move an invoice through its states, and what its completion credits: pure decisions, no I/O.
import { type Currency, inUnitsOf } from "./currencies.ts";
import type { InvoiceStatus, TransitionCause } from "./invoiceStatus.ts";
import { type Movement, merchantAccount, movement, type Posting, SYSTEM_ACCOUNTS } from "./ledger.ts";
import { convert } from "./money.ts";
import { assert } from "./result.ts";
import type { ScreeningReason } from "./screening.ts";

/**
 * Screening state of one payment: `unscreened` while its sender waits for screening (it settles
 * nothing), `none` once screened clear, `flagged` when screening listed it (or never answered),
 * then `cleared` or `blocked` by the operator.
 */
export type AmlStatus = "none" | "unscreened" | "flagged" | "cleared" | "blocked";

export interface PaymentFacts {
  readonly amountMinor: bigint;
  readonly confirmed: boolean;
  readonly amlStatus: AmlStatus;
}

export interface PaymentsSummary {
  /** `paid_amount`: every payment seen, confirmed or not, except blocked ones. */
  readonly paidMinor: bigint;
  /** What completion may count: confirmed payments that screening has not flagged or blocked. */
  readonly settledMinor: bigint;
  /** A payment waits for a screening decision. */
  readonly flagged: boolean;
  readonly count: number;
  /** Payments seen and counted in paid_amount but not (yet) settled: unconfirmed, or waiting for screening. */
  readonly unsettledCount: number;
}

export function summarizePayments(payments: readonly PaymentFacts[]): PaymentsSummary {
  let paidMinor = 0n;
  let settledMinor = 0n;
  let flagged = false;
  let unsettledCount = 0;
  for (const p of payments) {
    const settled = p.confirmed && (p.amlStatus === "none" || p.amlStatus === "cleared");
    if (p.amlStatus !== "blocked") paidMinor += p.amountMinor;
    if (settled) settledMinor += p.amountMinor;
    if (p.amlStatus !== "blocked" && !settled) unsettledCount += 1;
    if (p.amlStatus === "flagged") flagged = true;
  }
  return { paidMinor, settledMinor, flagged, count: payments.length, unsettledCount };
}

/**
 * The payments settlement decides on: all but those that reached the invoice after it stopped
 * taking payments (product §12 late payments), which are shown and wait for a resolution.
 */
export function onTimePayments<P extends { readonly late?: boolean }>(payments: readonly P[]): P[] {
  return payments.filter((p) => p.late !== true);
}

/** What a payer still owes: `final_amount` less everything seen (never negative). */
export function amountDue(finalAmountMinor: bigint, payments: readonly PaymentFacts[]): bigint {
  const due = finalAmountMinor - summarizePayments(payments).paidMinor;
  return due > 0n ? due : 0n;
}

export interface StatusChange {
  readonly to: InvoiceStatus;
  readonly cause: TransitionCause;
}

/**
 * The status an invoice takes after its payments changed (a payment arrived or was confirmed), or
 * null when it stays. A flag wins over coverage: nothing completes while screening has a question.
 * While in aml_check only a screening decision moves the invoice.
 */
export function statusAfterPayments(
  status: InvoiceStatus,
  finalAmountMinor: bigint,
  payments: readonly PaymentFacts[],
): StatusChange | null {
  if (status !== "pending" && status !== "processing") return null;
  const summary = summarizePayments(payments);
  if (summary.flagged) return { to: "aml_check", cause: "aml_flagged" };
  if (summary.settledMinor >= finalAmountMinor) return { to: "completed", cause: "payments_cover" };
  if (status === "pending" && summary.count > 0) return { to: "processing", cause: "payment_seen" };
  return null;
}

export type AmlDecision = "clear" | "block";

/** The AML status a flagged payment takes under a decision. */
export function amlStatusAfter(decision: AmlDecision): AmlStatus {
  return decision === "clear" ? "cleared" : "blocked";
}

/**
 * What a payment that waited for its sender's screening becomes by the answer (product §21):
 * screened clear it settles (`none`); listed, or no answer after the last attempt, it is flagged
 * with that reason for the operator.
 */
export function screenedPayment(outcome: "clear" | ScreeningReason): {
  amlStatus: AmlStatus;
  reason: ScreeningReason | null;
} {
  return outcome === "clear" ? { amlStatus: "none", reason: null } : { amlStatus: "flagged", reason: outcome };
}

/**
 * The status after screening decided on the flagged payments of an invoice in aml_check (the
 * payments given already carry the decision). Blocking ends the invoice in aml_block; clearing
 * completes it when confirmed payments cover `final_amount`, else it goes on collecting.
 */
export function statusAfterAml(
  status: InvoiceStatus,
  decision: AmlDecision,
  finalAmountMinor: bigint,
  payments: readonly PaymentFacts[],
): StatusChange | null {
  if (status !== "aml_check") return null;
  if (decision === "block") return { to: "aml_block", cause: "aml_blocked" };
  const summary = summarizePayments(payments);
  if (summary.settledMinor >= finalAmountMinor) return { to: "completed", cause: "aml_cleared" };
  return { to: "processing", cause: "aml_cleared" };
}

/**
 * The status of an invoice whose `expires_at` passed: expired with nothing paid, failed with less
 * than `final_amount` paid. Null when it stays: an invoice in aml_check waits for screening (the
 * table has no way out of aml_check on expiry), and one whose seen payments already cover
 * `final_amount` waits for their confirmation, since the payer has paid in full.
 */
export function statusAtExpiry(
  status: InvoiceStatus,
  finalAmountMinor: bigint,
  payments: readonly PaymentFacts[],
): StatusChange | null {
  const { paidMinor } = summarizePayments(payments);
  if (status === "pending" && paidMinor === 0n) return { to: "expired", cause: "expired" };
  if (status === "processing" && paidMinor < finalAmountMinor) return { to: "failed", cause: "expired" };
  return null;
}

export interface CompletionInput {
  readonly invoiceId: string;
  readonly merchantId: string;
  /** The currency the payer paid in. */
  readonly currency: Pick<Currency, "ticker" | "decimals" | "rateUsd">;
  /** The currency the merchant is credited in (the same as `currency` without autoconvert). */
  readonly settlement: Pick<Currency, "ticker" | "decimals" | "rateUsd">;
  readonly finalAmountMinor: bigint;
  readonly merchantFeeMinor: bigint;
  readonly networkAndOtherFeesMinor: bigint;
  readonly merchantReceiveAmountMinor: bigint;
  /** Confirmed, unflagged payments at completion; at least `finalAmountMinor`. */
  readonly settledMinor: bigint;
}

export interface Completion {
  /** Credited to the merchant, in the invoice currency: `merchant_receive_amount` plus any overpayment. */
  readonly creditMinor: bigint;
  /** The same credit in the settlement currency (converted at the catalog rates when they differ). */
  readonly settlementCreditMinor: bigint;
  readonly movement: Movement;
}

/**
 * The ledger movement of a completed invoice: the payments come in from the outside world and are
 * split into the merchant's credit and the two fees. When the invoice autoconverts, the merchant's
 * part passes through the conversion account, one balanced leg per currency. The movement is keyed
 * (invoice, id, completion), so the ledger posts it at most once.
 */
export function completionMovement(input: CompletionInput): Completion {
  const overpayment = input.settledMinor - input.finalAmountMinor;
  assert(overpayment >= 0n, "completion needs payments covering final_amount");
  const creditMinor = input.merchantReceiveAmountMinor + overpayment;
  const c = input.currency.ticker;
  const postings = incomePostings(c, input.settledMinor, input.merchantFeeMinor, input.networkAndOtherFeesMinor);
  const merchant = merchantAccount(input.merchantId);
  let settlementCreditMinor = creditMinor;
  if (input.settlement.ticker === c) {
    postings.push({ account: merchant, currency: c, amount: creditMinor });
  } else {
    settlementCreditMinor = convert(creditMinor, input.currency, input.settlement);
    const s = input.settlement.ticker;
    postings.push({ account: SYSTEM_ACCOUNTS.conversion, currency: c, amount: creditMinor });
    // A credit too small to survive rounding into the settlement currency stays with the conversion desk.
    if (settlementCreditMinor > 0n) {
      postings.push(
        { account: SYSTEM_ACCOUNTS.conversion, currency: s, amount: -settlementCreditMinor },
        { account: merchant, currency: s, amount: settlementCreditMinor },
      );
    }
  }
  return completion(input.invoiceId, creditMinor, settlementCreditMinor, postings);
}

/**
 * A payment's income in `currency` split into its fees (each posted when there is one), in the
 * entry's units (`inEntry`: the invoice's minor units to the entry's; identity for the invoice's own).
 */
function incomePostings(
  currency: string,
  settledMinor: bigint,
  merchantFeeMinor: bigint,
  networkFeeMinor: bigint,
  inEntry: (minor: bigint) => bigint = (minor) => minor,
): Posting[] {
  const postings: Posting[] = [{ account: SYSTEM_ACCOUNTS.incomingPayments, currency, amount: -inEntry(settledMinor) }];
  if (merchantFeeMinor > 0n) {
    postings.push({ account: SYSTEM_ACCOUNTS.merchantFees, currency, amount: inEntry(merchantFeeMinor) });
  }
  if (networkFeeMinor > 0n) {
    postings.push({ account: SYSTEM_ACCOUNTS.networkFees, currency, amount: inEntry(networkFeeMinor) });
  }
  return postings;
}

/** A completion: its credits and its movement, keyed (invoice, id, completion) so the ledger posts it at most once. */
function completion(
  invoiceId: string,
  creditMinor: bigint,
  settlementCreditMinor: bigint,
  postings: Posting[],
): Completion {
  return {
    creditMinor,
    settlementCreditMinor,
    movement: movement({
      cause: "invoice",
      causeId: invoiceId,
      kind: "completion",
      memo: `invoice ${invoiceId} completed`,
      postings,
    }),
  };
}

export interface LatePaymentInput {
  readonly invoiceId: string;
  readonly merchantId: string;
  readonly paymentId: string;
  readonly currency: Pick<Currency, "ticker" | "decimals" | "rateUsd">;
  readonly settlement: Pick<Currency, "ticker" | "decimals" | "rateUsd">;
  /** The payment's amount, in the invoice currency. */
  readonly amountMinor: bigint;
}

/**
 * A payment seen before completion but confirmed after it: an overpayment, credited in full like
 * the overpayment of a completion (product §5), in the settlement currency. Keyed by the payment,
 * so each late payment is credited once. Null when the amount does not survive conversion.
 */
export function latePaymentMovement(input: LatePaymentInput): Movement | null {
  const c = input.currency.ticker;
  const merchant = merchantAccount(input.merchantId);
  const postings: Posting[] = [{ account: SYSTEM_ACCOUNTS.incomingPayments, currency: c, amount: -input.amountMinor }];
  if (input.settlement.ticker === c) {
    postings.push({ account: merchant, currency: c, amount: input.amountMinor });
  } else {
    const credit = convert(input.amountMinor, input.currency, input.settlement);
    if (credit <= 0n) return null;
    const s = input.settlement.ticker;
    postings.push(
      { account: SYSTEM_ACCOUNTS.conversion, currency: c, amount: input.amountMinor },
      { account: SYSTEM_ACCOUNTS.conversion, currency: s, amount: -credit },
      { account: merchant, currency: s, amount: credit },
    );
  }
  return movement({
    cause: "invoice",
    causeId: input.invoiceId,
    kind: `late_payment:${input.paymentId}`,
    memo: `late payment ${input.paymentId} of invoice ${input.invoiceId}`,
    postings,
  });
}

export interface BlockedPaymentInput {
  readonly invoiceId: string;
  readonly paymentId: string;
  /** The invoice currency's ticker. */
  readonly currency: string;
  readonly amountMinor: bigint;
}

/**
 * A confirmed payment screening blocked (product §21): it arrived, so it leaves the incoming
 * payments, and it is held in the operator's screening account, never the merchant's. Keyed by the
 * payment, so it is posted once.
 */
export function blockedPaymentMovement(input: BlockedPaymentInput): Movement {
  return movement({
    cause: "invoice",
    causeId: input.invoiceId,
    kind: `aml_block:${input.paymentId}`,
    memo: `payment ${input.paymentId} of invoice ${input.invoiceId} blocked by screening`,
    postings: [
      { account: SYSTEM_ACCOUNTS.incomingPayments, currency: input.currency, amount: -input.amountMinor },
      { account: SYSTEM_ACCOUNTS.screeningHeld, currency: input.currency, amount: input.amountMinor },
    ],
  });
}

/** What one catalog entry of the invoice currency received (product §23), in the invoice's precision. */
export interface EntryShare {
  readonly entry: Pick<Currency, "ticker" | "decimals">;
  readonly settledMinor: bigint;
}

/**
 * The completion of an invoice paid on several entries of its currency, credited per entry
 * (balances are per entry, product §23): each entry's payments come in and are split into the
 * merchant's credit and the fees, the fees taken from the largest shares first. Amounts are in the
 * invoice's `precision` and posted in each entry's own units. Without autoconvert only.
 */
export function splitCompletionMovement(
  input: CompletionInput,
  shares: readonly EntryShare[],
  precision: number,
): Completion {
  const settledMinor = shares.reduce((sum, s) => sum + s.settledMinor, 0n);
  assert(settledMinor >= input.finalAmountMinor, "completion needs payments covering final_amount");
  let merchantFee = input.merchantFeeMinor;
  let networkFee = input.networkAndOtherFeesMinor;
  const merchant = merchantAccount(input.merchantId);
  const postings: Posting[] = [];
  let creditMinor = 0n;
  for (const share of [...shares].sort((a, b) =>
    a.settledMinor < b.settledMinor ? 1 : a.settledMinor > b.settledMinor ? -1 : 0,
  )) {
    // In the entry's own units: exact for amounts at the ticker's precision; otherwise (an invoice made
    // before an entry with fewer decimals came) the fees are truncated and the merchant keeps the rest.
    const inEntry = (minor: bigint) => inUnitsOf(minor, precision, share.entry.decimals);
    const c = share.entry.ticker;
    const mf = merchantFee < share.settledMinor ? merchantFee : share.settledMinor;
    merchantFee -= mf;
    const nf = networkFee < share.settledMinor - mf ? networkFee : share.settledMinor - mf;
    networkFee -= nf;
    const credit = share.settledMinor - mf - nf;
    creditMinor += credit;
    postings.push(...incomePostings(c, share.settledMinor, mf, nf, inEntry));
    // The credit is what is left of the share in the entry's units (each conversion may cut).
    const creditInEntry = inEntry(share.settledMinor) - inEntry(mf) - inEntry(nf);
    if (creditInEntry > 0n) postings.push({ account: merchant, currency: c, amount: creditInEntry });
  }
  return completion(input.invoiceId, creditMinor, creditMinor, postings);
}
