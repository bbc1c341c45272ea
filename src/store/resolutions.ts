// Resolution's rows (product §12, §19): the payments a resolution would cover, a resolution refund's id and its request, the invoice's and its payments' resolution marks (the rules are src/app/resolveInvoice.ts's).
import { createHash } from "node:crypto";
import type { Invoice } from "../domain/invoices.ts";
import type { Tx } from "./store.ts";

/**
 * The id of a resolution refund (and its payout): one per resolution of the invoice (the first
 * `resolution-<invoice>`, the n-th `resolution-<invoice>-<n>`), so one resolution cannot pay twice.
 */
export function resolutionRefundId(invoiceId: string, n = 1): string {
  return n === 1 ? `resolution-${invoiceId}` : `resolution-${invoiceId}-${n}`;
}

/**
 * What a resolution would cover (product §19): the invoice's confirmed payments no resolution
 * covered yet, and how many resolutions came before. Answers null while a payment is unconfirmed
 * (a resolution must not leave part of the money behind, nor count money that may vanish). A
 * payment flagged by screening, or still waiting for it, is left out (product §21): its money is
 * neither the merchant's nor the sender's until the operator decides (then a later resolution
 * covers it, when cleared); `underReview` counts them.
 */
export async function unresolvedPayments(tx: Tx, invoiceId: string) {
  const rows = await tx.db
    .selectFrom("invoice_payments")
    .select(["id", "confirmed", "resolved_at", "aml_status"])
    .where("invoice_id", "=", invoiceId)
    .execute();
  if (rows.some((r) => r.confirmed !== 1)) return null;
  const unresolved = rows.filter((r) => r.resolved_at === null || r.resolved_at === undefined);
  const reviewed = (r: (typeof rows)[number]) => r.aml_status === "flagged" || r.aml_status === "unscreened";
  const open = new Set(unresolved.filter((r) => !reviewed(r)).map((r) => r.id));
  const before = new Set(rows.flatMap((r) => (r.resolved_at ? [r.resolved_at] : []))).size;
  return { open, before, underReview: unresolved.filter(reviewed).length };
}

/** Refunds and payouts belong to a request id: the resolution is the operation (no merchant signed it). False: it exists. */
export async function claimResolutionRequest(
  tx: Tx,
  invoice: Invoice,
  requestKey: string,
  address: string,
  now: string,
): Promise<boolean> {
  const claimed = await tx.db
    .insertInto("signed_requests")
    .values({
      request_id: requestKey,
      request_id_sent: requestKey,
      merchant_id: invoice.merchantId,
      route: "/admin/v1/invoices/{id}/resolve",
      body_hash: createHash("sha256").update(`refund:${address}`).digest("hex"),
      state: "completed",
      response_status: null,
      response_body: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("request_id").doNothing())
    .executeTakeFirst();
  return (claimed.numInsertedOrUpdatedRows ?? 0n) !== 0n;
}

/** The invoice's latest resolution, and the payments it covered (a later payment is resolved again). */
export async function markResolved(
  tx: Tx,
  invoiceId: string,
  resolution: "accept" | "refund",
  paymentIds: readonly string[],
  now: string,
) {
  await tx.db
    .updateTable("invoices")
    .set({ resolution, resolved_at: now, updated_at: now })
    .where("id", "=", invoiceId)
    .execute();
  if (paymentIds.length > 0) {
    await tx.db
      .updateTable("invoice_payments")
      .set({ resolved_at: now })
      .where("id", "in", [...paymentIds])
      .where("resolved_at", "is", null)
      .execute();
  }
}
