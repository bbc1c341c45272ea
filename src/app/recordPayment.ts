// Record an incoming payment for a locked invoice (card provider, sandbox, and the chain through recordChainPayment): a new one or one seen again, and the status all its payments give the invoice (product §5).
import { isPayable } from "../domain/invoiceStatus.ts";
import type { ChainPaymentPlace } from "../domain/invoices.ts";
import { err, ok, type Result } from "../domain/result.ts";
import { amountDue, onTimePayments, statusAfterPayments } from "../domain/settlement.ts";
import {
  confirmPayment,
  type Invoice,
  insertPayment,
  listPayments,
  type TransitionError,
  touchInvoice,
} from "../store/invoices.ts";
import { valueAtConfirmation } from "../store/settlement.ts";
import type { Tx } from "../store/store.ts";
import { changeStatus, creditable, creditLatePayment } from "./settlement.ts";

/** An incoming payment as a payment source reports it; fields left undefined were not stated. */
export interface PaymentEvent {
  txId: string;
  /** Minor units of the invoice currency; undefined means "what is still due". */
  amountMinor?: bigint;
  fromAddress?: string | null;
  confirmed?: boolean;
  amlFlag?: boolean;
  /** The sender waits for screening (product §21): the payment settles nothing until it is screened. */
  unscreened?: boolean;
  /** Card payment provider for fiat invoices; null for on-chain payments. */
  provider: string | null;
  /** When the payment happened (a chain payment: its block's time); the expiry check uses it. Default: now. */
  arrivedAt?: string;
  /** A live chain payment's place (product §12). */
  chain?: ChainPaymentPlace;
}

export type PaymentError = "invoice_not_payable" | "payment_conflict" | "nothing_due" | TransitionError;

/**
 * Records an incoming payment for a locked invoice (see lockInvoice) and moves the invoice on.
 * A transaction id already recorded is the same payment seen again: it may confirm it, and
 * otherwise changes nothing (so a duplicate delivery is harmless); stating different facts for it
 * is a conflict. New payments are only taken while the invoice is payable.
 */
// longer than 70 lines: a payment seen again (which may confirm it) or a new one, then the status from
// all payments: both cases add to the one `payments` list the new status is computed from.
export async function recordPayment(
  tx: Tx,
  invoice: Invoice,
  event: PaymentEvent,
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, PaymentError>> {
  const payments = await listPayments(tx, invoice.id);
  const known = payments.find((p) => p.txId === event.txId);
  if (known) {
    const conflicts =
      (event.amountMinor !== undefined && event.amountMinor !== known.amountMinor) ||
      (event.fromAddress !== undefined && event.fromAddress !== known.fromAddress) ||
      (event.confirmed === false && known.confirmed) ||
      (event.amlFlag === true && known.amlStatus === "none") ||
      event.provider !== known.provider;
    if (conflicts) return err("payment_conflict", `transaction ${event.txId} was recorded with other details`);
    if (event.confirmed === false || known.confirmed) return ok(invoice);
    if (invoice.status === "completed") {
      // Seen before completion, confirmed after it: money that arrived, credited as an overpayment.
      // (Refunds wait for such payments, so no refund can have been paid out without it.)
      await confirmPayment(tx, known.id, now, await valueAtConfirmation(tx, invoice, known.amountMinor, now));
      if (creditable(known)) await creditLatePayment(tx, invoice, known, now);
      await touchInvoice(tx, invoice.id, now);
      return ok({ ...invoice, updatedAt: now });
    }
    if (!isPayable(invoice.status)) return err("invoice_not_payable", `the invoice is ${invoice.status}`);
    await confirmPayment(tx, known.id, now, await valueAtConfirmation(tx, invoice, known.amountMinor, now));
    known.confirmed = true;
  } else {
    if (!isPayable(invoice.status)) return err("invoice_not_payable", `the invoice is ${invoice.status}`);
    // After expires_at a new payment no longer counts, whether or not the expiry worker has run yet.
    // A chain payment counts by its block's stamp, and one stamped at expires_at is on time (§19).
    const expired =
      invoice.expiresAt !== null &&
      (event.arrivedAt === undefined ? invoice.expiresAt <= now : invoice.expiresAt < event.arrivedAt);
    if (expired) {
      return err("invoice_not_payable", `the invoice expired at ${invoice.expiresAt}`);
    }
    const amountMinor = event.amountMinor ?? amountDue(invoice.finalAmountMinor, payments);
    if (amountMinor <= 0n) return err("nothing_due", "payments seen already cover final_amount");
    const confirmed = event.confirmed ?? true;
    payments.push(
      await insertPayment(
        tx,
        {
          invoiceId: invoice.id,
          txId: event.txId,
          amountMinor,
          fromAddress: event.fromAddress ?? null,
          confirmed,
          amlStatus: event.amlFlag ? "flagged" : event.unscreened ? "unscreened" : "none",
          provider: event.provider,
          chain: event.chain ?? null,
          value: confirmed ? await valueAtConfirmation(tx, invoice, amountMinor, now) : null,
        },
        now,
      ),
    );
  }
  const apiSource = invoice.apiSource === null && event.provider !== null ? event.provider : undefined;
  await touchInvoice(tx, invoice.id, now, apiSource);
  const touched: Invoice = { ...invoice, updatedAt: now, apiSource: apiSource ?? invoice.apiSource };
  const counted = onTimePayments(payments);
  return changeStatus(
    tx,
    touched,
    statusAfterPayments(touched.status, touched.finalAmountMinor, counted),
    counted,
    now,
    publicBaseUrl,
  );
}
