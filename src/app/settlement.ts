// The settlement steps the payment use cases share (recordPayment, recordChainPayment, screening, decideAml): a status change with the completion credit it brings (once), a late payment's credit, a blocked payment held.
import { ok, type Result } from "../domain/result.ts";
import {
  blockedPaymentMovement,
  type Completion,
  completionMovement,
  latePaymentMovement,
  onTimePayments,
  type StatusChange,
  splitCompletionMovement,
  summarizePayments,
} from "../domain/settlement.ts";
import {
  applyTransition,
  type IncomingPayment,
  type Invoice,
  listPayments,
  type TransitionError,
} from "../store/invoices.ts";
import { entryOfPayment, entryShares, invoiceCurrencies, postCredit } from "../store/settlement.ts";
import type { Tx } from "../store/store.ts";

/**
 * Credits a completed invoice to its merchant: `merchant_receive_amount` plus any overpayment, in
 * the settlement currency. The ledger keys the movement (invoice, id, completion), so a second
 * call, from a duplicate event or another process, posts nothing.
 */
export async function creditCompletion(
  tx: Tx,
  invoice: Invoice,
  payments: readonly IncomingPayment[],
  now: string,
): Promise<Completion> {
  const { currency, settlement } = await invoiceCurrencies(tx, invoice);
  const counted = onTimePayments(payments);
  const input = {
    invoiceId: invoice.id,
    merchantId: invoice.merchantId,
    currency,
    settlement,
    finalAmountMinor: invoice.finalAmountMinor,
    merchantFeeMinor: invoice.merchantFeeMinor,
    networkAndOtherFeesMinor: invoice.networkAndOtherFeesMinor,
    merchantReceiveAmountMinor: invoice.merchantReceiveAmountMinor,
    settledMinor: summarizePayments(counted).settledMinor,
  };
  const shares = settlement.ticker === currency.ticker ? await entryShares(tx, invoice, counted) : null;
  const completion =
    shares === null ? completionMovement(input) : splitCompletionMovement(input, shares, currency.decimals);
  await postCredit(tx, completion.movement, now);
  return completion;
}

/** The settlement-currency credit of a payment confirmed after its invoice completed; once per payment. */
export async function creditLatePayment(
  tx: Tx,
  invoice: Invoice,
  payment: IncomingPayment,
  now: string,
): Promise<void> {
  const { currency, settlement } = await invoiceCurrencies(tx, invoice);
  // Without autoconvert, in the entry the payment came in on (balances are per entry, product §23).
  const entry = settlement.ticker === currency.ticker ? await entryOfPayment(tx, invoice, payment) : null;
  const late = latePaymentMovement({
    invoiceId: invoice.id,
    merchantId: invoice.merchantId,
    paymentId: payment.id,
    currency: entry?.entry ?? currency,
    settlement: entry?.entry ?? settlement,
    amountMinor: entry?.amountMinor ?? payment.amountMinor,
  });
  if (late !== null) await postCredit(tx, late, now);
}

/** Applies a status change decided by the domain and, when it completes the invoice, credits it in the same transaction. */
export async function changeStatus(
  tx: Tx,
  invoice: Invoice,
  change: StatusChange | null,
  payments: readonly IncomingPayment[],
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, TransitionError>> {
  if (change === null) return ok(invoice);
  const moved = await applyTransition(tx, invoice, change.to, change.cause, now, publicBaseUrl);
  if (moved.ok && moved.value.status === "completed" && change.cause !== "resolution_accepted") {
    await creditCompletion(tx, moved.value, payments, now);
    // Late payments confirmed while the invoice was still open (one on-time payment left to
    // confirm) were credited to no one: completed now, they are overpayments like later ones. An
    // invoice completes this way only from an open status, so no resolution covered them.
    const all = await listPayments(tx, invoice.id);
    for (const late of all.filter((p) => p.late === true && p.confirmed && creditable(p))) {
      await creditLatePayment(tx, moved.value, late, now);
    }
  }
  return moved;
}

/** A payment screening has passed (or the operator cleared): it may be credited. */
export function creditable(payment: IncomingPayment): boolean {
  return payment.amlStatus === "none" || payment.amlStatus === "cleared";
}

/** A confirmed blocked payment goes to the operator's screening account (once per payment). */
export async function holdBlockedPayment(
  tx: Tx,
  invoice: Invoice,
  payment: IncomingPayment,
  now: string,
): Promise<void> {
  const held = blockedPaymentMovement({
    invoiceId: invoice.id,
    paymentId: payment.id,
    currency: invoice.currency,
    amountMinor: payment.amountMinor,
  });
  await postCredit(tx, held, now);
}
