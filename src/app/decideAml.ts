// The screening decision on an invoice in aml_check, or on one flagged late payment (product §21): clear (it settles as §5, §12 say) or block (the funds go to the operator's screening account), audited.

import { assert, invariantViolation } from "../domain/result.ts";
import type { AmlDecision } from "../domain/settlement.ts";
import { findInvoiceById, type Invoice, type LoadedInvoice, lockInvoice } from "../store/invoices.ts";
import { recordAmlDecision } from "../store/screening.ts";
import { decideAml, decideLatePayment, type LatePaymentAmlError } from "../store/settlement.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

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
  const decided = await decideAml(tx, invoice, decision, now, publicBaseUrl);
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
