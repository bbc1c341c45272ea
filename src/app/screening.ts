// Screening use cases (product §21): an address against every source, a destination refused before money leaves, payments waiting for their sender's screening.

import { creditsLatePayments } from "../domain/invoiceStatus.ts";
import { assertOk } from "../domain/result.ts";
import {
  afterUnavailable,
  combineVerdicts,
  type ScreeningReason,
  type ScreeningSources,
  type ScreeningVerdict,
  simulatedVerdict,
} from "../domain/screening.ts";
import { onTimePayments, screenedPayment, statusAfterPayments } from "../domain/settlement.ts";
import {
  type IncomingPayment,
  type Invoice,
  listPayments,
  lockInvoice,
  markScreened,
  touchInvoice,
} from "../store/invoices.ts";
import { deferScreening, paymentsDueForScreening } from "../store/screening.ts";
import type { SenderScreening } from "../store/settlement.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { changeStatus, creditable, creditLatePayment } from "./settlement.ts";

/** Payments screened per batch of the screening worker. */
export const SCREENING_BATCH = 50;
/** An hour: the longest pause between two attempts on one payment. */
const RETRY_CAP_MS = 3_600_000;

/**
 * An address against every configured source (the list, the provider, and in the sandbox its
 * simulated flag): listed if any lists it, `unavailable` if one could not answer. With no source
 * configured every address is clear.
 */
export async function screenAddress(
  sources: ScreeningSources,
  address: string,
  simulatedFlag?: boolean,
): Promise<ScreeningVerdict> {
  const verdicts: ScreeningVerdict[] = [];
  if (simulatedFlag !== undefined) verdicts.push(simulatedVerdict(simulatedFlag));
  if (sources.list) verdicts.push(await sources.list.check(address));
  // A listed address needs no second opinion, and the provider is the slow one.
  if (sources.provider && !verdicts.includes("listed")) verdicts.push(await sources.provider.check(address));
  return combineVerdicts(verdicts);
}

/**
 * A new payment's sender as far as it is known without waiting on the provider (the scanner calls
 * this outside its transaction, for each new deposit): the list, and the provider's cached answer.
 * `pending` sends the payment to the screening worker, which asks the provider (screenWaitingPayments).
 */
export async function screenSenderNow(sources: ScreeningSources, address: string): Promise<SenderScreening> {
  const verdicts: ScreeningVerdict[] = [];
  if (sources.list) verdicts.push(await sources.list.check(address));
  if (sources.provider && !verdicts.includes("listed"))
    verdicts.push(sources.provider.cached(address) ?? "unavailable");
  const verdict = combineVerdicts(verdicts);
  return verdict === "unavailable" ? "pending" : verdict;
}

/** The screening of a payout's destination just before it is signed: `pending` when no source answered (it waits). */
export async function screenPayoutDestination(ctx: ServiceContext, address: string): Promise<SenderScreening> {
  const verdict = await screenAddress(ctx.screening, address);
  return verdict === "unavailable" ? "pending" : verdict;
}

/** How an address no source could answer is tried again: payments' and customers' deposits alike. */
export function screeningRetryRule(ctx: Pick<ServiceContext, "config">) {
  return {
    baseMs: ctx.config.screening.retryBaseMs,
    capMs: RETRY_CAP_MS,
    maxAttempts: ctx.config.screening.maxAttempts,
  };
}

/**
 * One bounded batch of the screening worker: each payment waiting for its sender's screening is
 * screened (outside any transaction), then settled by the answer in its invoice's transaction. No
 * answer is tried again with a doubling delay, and after the last attempt the payment is flagged
 * (aml_check): a payment is never completed unscreened. Answers how many payments it handled.
 */
export async function screenWaitingPayments(ctx: ServiceContext, log: ScreeningLog): Promise<number> {
  const rule = screeningRetryRule(ctx);
  const due = await paymentsDueForScreening(ctx.store, nowIso(), SCREENING_BATCH);
  for (const p of due) {
    // A payment without a sender cannot be cleared by any list: the operator decides.
    const verdict = p.fromAddress === null ? "unavailable" : await screenAddress(ctx.screening, p.fromAddress);
    const next = verdict === "unavailable" ? afterUnavailable(p.attempts + 1, rule) : null;
    await ctx.store.transaction(async (tx) => {
      const now = nowIso();
      if (next?.kind === "retry") {
        await deferScreening(tx, p, new Date(Date.parse(now) + next.delayMs).toISOString(), now);
        return;
      }
      const invoice = await lockInvoice(tx, p.invoiceId);
      if (!invoice) return;
      const outcome = verdict === "clear" ? "clear" : verdict === "listed" ? "listed" : "screening_unavailable";
      await applyScreening(tx, invoice, p.paymentId, outcome, now, ctx.config.publicBaseUrl);
    });
    if (verdict !== "clear") {
      log.warn(
        { worker: "screening", invoiceId: p.invoiceId, paymentId: p.paymentId, verdict, attempts: p.attempts + 1 },
        next?.kind === "retry"
          ? "sender not screened: trying again later"
          : "payment flagged by screening (its invoice goes to aml_check while it takes payments)",
      );
    }
  }
  return due.length;
}

/**
 * Applies the screening of one payment that waited for it (aml_status `unscreened`) to its locked
 * invoice: clear lets it settle (it may complete the invoice, or be credited as an overpayment of
 * a completed one); listed, or no answer after the last attempt, flags it and the invoice goes to
 * aml_check. Answers false when the payment no longer waits.
 */
async function applyScreening(
  tx: Tx,
  invoice: Invoice,
  paymentId: string,
  outcome: "clear" | ScreeningReason,
  now: string,
  publicBaseUrl: string,
): Promise<boolean> {
  const payment = (await listPayments(tx, invoice.id)).find((p) => p.id === paymentId);
  if (payment?.amlStatus !== "unscreened") return false;
  await markScreened(tx, paymentId, screenedPayment(outcome), now);
  const payments = await listPayments(tx, invoice.id);
  const updated = payments.find((p) => p.id === paymentId) as IncomingPayment;
  if (creditsLatePayments(invoice.status) && updated.confirmed && creditable(updated)) {
    await creditLatePayment(tx, invoice, updated, now);
  }
  await touchInvoice(tx, invoice.id, now);
  const touched: Invoice = { ...invoice, updatedAt: now };
  const counted = onTimePayments(payments);
  const change = statusAfterPayments(touched.status, touched.finalAmountMinor, counted);
  const moved = await changeStatus(tx, touched, change, counted, now, publicBaseUrl);
  assertOk(moved, `screening ${paymentId}`);
  return true;
}

export interface ScreeningLog {
  warn(fields: object, message: string): void;
}
