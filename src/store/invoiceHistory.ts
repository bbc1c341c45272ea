// An invoice's status history for the dashboard: its status-change events (the events table), oldest first.
import type { Tx } from "./store.ts";

/** An invoice has a handful of status changes; the read is bounded all the same. */
export const HISTORY_LIMIT = 100;

export interface StatusHistoryEntry {
  status: string;
  at: string;
  eventId: string;
}

/** The invoice's `invoice.<status>` events of this merchant, oldest first (the events_subject index). */
export async function invoiceStatusHistory(
  tx: Tx,
  merchantId: string,
  invoiceId: string,
): Promise<StatusHistoryEntry[]> {
  const rows = await tx.db
    .selectFrom("events")
    .select(["id", "type", "created_at"])
    .where("subject_id", "=", invoiceId)
    .where("merchant_id", "=", merchantId)
    .where("type", "like", "invoice.%")
    .orderBy("created_at")
    .orderBy("id")
    .limit(HISTORY_LIMIT)
    .execute();
  return rows.map((r) => ({ status: r.type.slice("invoice.".length), at: r.created_at, eventId: r.id }));
}
