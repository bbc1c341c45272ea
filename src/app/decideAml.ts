// The screening decision on an invoice in aml_check, or on one flagged late payment (product §21): clear (it settles as §5, §12 say) or block (the funds go to the operator's screening account), audited.

import { creditsLatePayments } from "../domain/invoiceStatus.ts";
import { invoiceView } from "../domain/invoices.ts";
import { assert, err, invariantViolation, ok, type Result } from "../domain/result.ts";
import { type AmlDecision, amlStatusAfter, onTimePayments, statusAfterAml } from "../domain/settlement.ts";
import { recordInvoiceEvent } from "../store/events.ts";
import {
  findInvoiceById,
  type Invoice,
  type LoadedInvoice,
  listPayments,
  lockInvoice,
  setPaymentAmlStatus,
  type TransitionError,
  touchInvoice,
} from "../store/invoices.ts";
import { recordAmlDecision } from "../store/screening.ts";
import { invoiceCurrencies } from "../store/settlement.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";
import { changeStatus, creditLatePayment, holdBlockedPayment } from "./settlement.ts";

/** What deciding one flagged late payment refuses. */
export type LatePaymentAmlError = "payment_not_found" | "payment_not_flagged" | "payment_not_late";

/** What deciding an invoice's flagged payments refuses. */
type AmlError = "invoice_not_in_aml_check" | TransitionError;

/** What a screening decision refuses. */
export type DecideAmlRefusal =
  | "invoice_not_found"
  | "invoice_not_in_aml_check"
  | "invoice_status_changed"
  | LatePaymentAmlError;

/**
 * Decides on the flagged payments of an invoice in aml_check, or (`paymentId`) on one flagged late
 * payment of an invoice that stopped taking payments, for the operator API (any merchant's
 * invoice) and the sandbox (`merchantId`: the merchant's own). The invoice is locked, so of two
 * concurrent decisions the second finds it decided: 409. The decision is recorded with who made
 * it; the change records its event and queues its callback. A refusal rolls the transaction back.
 */
export async function decideAmlOnInvoice(
  ctx: ServiceContext,
  invoiceId: string,
  decision: AmlDecision,
  actor: string,
  merchantId?: string,
  paymentId?: string,
): Promise<Outcome<LoadedInvoice, DecideAmlRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const invoice = await lockInvoice(tx, invoiceId, merchantId);
      if (!invoice) return refuse("invoice_not_found", "No invoice with this id.", "/", null);
      const now = nowIso();
      const statusAfter =
        paymentId === undefined
          ? await decideInvoice(tx, invoice, decision, now, ctx.config.publicBaseUrl)
          : await decidePayment(tx, invoice, paymentId, decision, now, ctx.config.publicBaseUrl);
      await recordAmlDecision(tx, { invoiceId, decision, actor, statusAfter, paymentId }, now);
      const after = await findInvoiceById(tx, invoiceId);
      assert(after, "a decided invoice exists");
      return after;
    }),
  );
}

/** The decision on an invoice in aml_check; answers its status after. */
async function decideInvoice(
  tx: Tx,
  invoice: Invoice,
  decision: AmlDecision,
  now: string,
  publicBaseUrl: string,
): Promise<string> {
  const decided = await decideFlaggedPayments(tx, invoice, decision, now, publicBaseUrl);
  if (decided.ok) return decided.value.status;
  if (decided.error === "invoice_not_in_aml_check") {
    refuse(
      decided.error,
      `${decided.detail ?? "The invoice is not in aml_check"}; a flagged late payment is decided with its paymentId.`,
      "/",
      null,
    );
  }
  if (decided.error === "status_changed") {
    refuse("invoice_status_changed", "The invoice changed meanwhile; read it and retry.", "/", null);
  }
  throw invariantViolation(`screening decided a transition the table refuses (${decided.detail})`);
}

/** The decision on one flagged late payment (the invoice's status stays); answers the status. */
async function decidePayment(
  tx: Tx,
  invoice: Invoice,
  paymentId: string,
  decision: AmlDecision,
  now: string,
  publicBaseUrl: string,
): Promise<string> {
  const decided = await decideLatePayment(tx, invoice, paymentId, decision, now, publicBaseUrl);
  if (!decided.ok) refuse(decided.error, `${decided.detail ?? "The payment cannot be decided"}.`, "/", null);
  return decided.value.status;
}

/** A screening decision on the flagged (on-time) payments of a locked invoice in aml_check. */
async function decideFlaggedPayments(
  tx: Tx,
  invoice: Invoice,
  decision: AmlDecision,
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, AmlError>> {
  if (invoice.status !== "aml_check") {
    return err("invoice_not_in_aml_check", `the invoice is ${invoice.status}, not aml_check`);
  }
  const next = amlStatusAfter(decision);
  // Its on-time payments: a flagged late one is decided on its own (decideLatePayment), since
  // what clearing it means (an overpayment, a resolution) is not what clearing the invoice does.
  const flagged = onTimePayments(await listPayments(tx, invoice.id)).filter((p) => p.amlStatus === "flagged");
  for (const p of flagged) await setPaymentAmlStatus(tx, p.id, "flagged", next, now);
  if (decision === "block") {
    for (const p of flagged) if (p.confirmed) await holdBlockedPayment(tx, invoice, p, now);
  }
  const payments = onTimePayments(await listPayments(tx, invoice.id));
  const change = statusAfterAml(invoice.status, decision, invoice.finalAmountMinor, payments);
  return changeStatus(tx, invoice, change, payments, now, publicBaseUrl);
}

/**
 * A screening decision on one flagged late payment of a locked invoice (product §21): a payment
 * that reached the invoice after it stopped taking payments, so no invoice status moves. `clear`
 * makes it count like any late payment (credited as an overpayment of a completed invoice, else
 * resolvable, §12/§19); `block` moves it, once confirmed, to the operator's screening account. The
 * merchant hears of it through an invoice event (its callback), as of a resolution.
 */
async function decideLatePayment(
  tx: Tx,
  invoice: Invoice,
  paymentId: string,
  decision: AmlDecision,
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, LatePaymentAmlError>> {
  const payment = (await listPayments(tx, invoice.id)).find((p) => p.id === paymentId);
  if (!payment) return err("payment_not_found", `the invoice has no payment ${paymentId}`);
  if (payment.amlStatus !== "flagged") {
    return err(
      "payment_not_flagged",
      `the payment is ${payment.amlStatus}, not flagged: it was decided already or never flagged`,
    );
  }
  if (!payment.late) {
    return err("payment_not_late", "the payment came in time: decide the invoice in aml_check, without paymentId");
  }
  const decided = { ...payment, amlStatus: amlStatusAfter(decision) };
  await setPaymentAmlStatus(tx, paymentId, "flagged", decided.amlStatus, now);
  if (decided.confirmed && decision === "block") await holdBlockedPayment(tx, invoice, decided, now);
  if (decided.confirmed && decision === "clear" && creditsLatePayments(invoice.status)) {
    await creditLatePayment(tx, invoice, decided, now);
  }
  await touchInvoice(tx, invoice.id, now);
  const touched: Invoice = { ...invoice, updatedAt: now };
  const { currency } = await invoiceCurrencies(tx, invoice);
  const view = invoiceView(touched, currency.decimals, await listPayments(tx, invoice.id), publicBaseUrl);
  await recordInvoiceEvent(tx, view, now);
  return ok(touched);
}
