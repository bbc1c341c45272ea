// Dashboard lists (product §14): invoices of one status paged by one index range, and an invoice's status history by its subject.
import type { Kysely } from "kysely";

export const dashboardLists = {
  async up(db: Kysely<unknown>): Promise<void> {
    // A status filter pages through its own range: with only (merchant_id, created_at, id), a rare
    // status made a page read every invoice of the merchant between two matches (bench:lists).
    await db.schema
      .createIndex("invoices_merchant_status_created")
      .on("invoices")
      .columns(["merchant_id", "status", "created_at", "id"])
      .execute();
    // An invoice's detail page reads its events (its status history): one index range, not a scan
    // of the merchant's events, however many millions that merchant has.
    await db.schema.createIndex("events_subject").on("events").columns(["subject_id", "created_at"]).execute();
  },
};
