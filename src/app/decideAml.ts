// The screening decision on an invoice in aml_check (product §21): clear (it settles as §5 says) or block (the funds go to the operator's screening account), audited.

import { assert, invariantViolation } from "../domain/result.ts";
import type { AmlDecision } from "../domain/settlement.ts";
import { findInvoiceById, type LoadedInvoice, lockInvoice } from "../store/invoices.ts";
import { recordAmlDecision } from "../store/screening.ts";
import { decideAml } from "../store/settlement.ts";
import { nowIso } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { Problem } from "./problem.ts";

/**
 * Decides on the flagged payments of an invoice in aml_check, for the operator API (any merchant's
 * invoice) and the sandbox (`merchantId`: the merchant's own). The invoice is locked, so of two
 * concurrent decisions the second finds it decided: 409 invoice_not_in_aml_check. The decision is
 * recorded with who made it; the status change records its event and queues its callback.
 */
export async function decideAmlOnInvoice(
  ctx: ServiceContext,
  invoiceId: string,
  decision: AmlDecision,
  actor: string,
  merchantId?: string,
): Promise<LoadedInvoice> {
  return ctx.store.transaction(async (tx) => {
    const invoice = await lockInvoice(tx, invoiceId, merchantId);
    if (!invoice) throw new Problem("invoice_not_found", "No invoice with this id.");
    const now = nowIso();
    const decided = await decideAml(tx, invoice, decision, now, ctx.config.publicBaseUrl);
    if (!decided.ok) {
      if (decided.error === "invoice_not_in_aml_check") {
        throw new Problem(decided.error, `${decided.detail ?? "The invoice is not in aml_check"}.`);
      }
      if (decided.error === "status_changed") {
        throw new Problem("invoice_status_changed", "The invoice changed meanwhile; read it and retry.");
      }
      throw invariantViolation(`screening decided a transition the table refuses (${decided.detail})`);
    }
    await recordAmlDecision(tx, { invoiceId, decision, actor, statusAfter: decided.value.status }, now);
    const after = await findInvoiceById(tx, invoiceId);
    assert(after, "a decided invoice exists");
    return after;
  });
}
