// Expire invoices whose expires_at passed (the expiry worker, product §5): expired with nothing paid, failed when partly paid, a payment link's unpaid invoice without an event.
import { assertOk } from "../domain/result.ts";
import { onTimePayments, statusAtExpiry } from "../domain/settlement.ts";
import {
  applyTransition,
  claimDueInvoices,
  deferExpiry,
  linkInvoiceIds,
  paymentsOf,
  setStatus,
} from "../store/invoices.ts";
import type { Store } from "../store/store.ts";

/**
 * One bounded batch of the expiry worker: claims due invoices (skipping rows other processes hold)
 * and expires or fails each as product §5 says, in one transaction. Answers how many it handled.
 */
export async function expireDueInvoices(
  store: Store,
  now: string,
  limit: number,
  publicBaseUrl: string,
): Promise<number> {
  return store.transaction(async (tx) => {
    const due = await claimDueInvoices(tx, now, limit);
    const payments = await paymentsOf(
      tx,
      due.map((i) => i.id),
    );
    const ofLinks = await linkInvoiceIds(
      tx,
      due.map((i) => i.id),
    );
    for (const invoice of due) {
      const ofInvoice = onTimePayments(payments.get(invoice.id) ?? []);
      const change = statusAtExpiry(invoice.status, invoice.finalAmountMinor, ofInvoice);
      if (change === null) {
        await deferExpiry(tx, invoice);
        continue;
      }
      // A payment link's invoice nobody paid into was a look, not an order (product §25): it expires
      // without an event or a callback, so anonymous visits cannot make the service call the merchant.
      const abandoned = change.to === "expired" && ofLinks.has(invoice.id);
      const moved = abandoned
        ? await setStatus(tx, invoice, change.to, change.cause, now)
        : await applyTransition(tx, invoice, change.to, change.cause, now, publicBaseUrl);
      // Claimed rows are locked (PostgreSQL) or the transaction is serialized (SQLite): a refusal is a bug.
      assertOk(moved, `expiring ${invoice.id}`);
    }
    return due.length;
  });
}
