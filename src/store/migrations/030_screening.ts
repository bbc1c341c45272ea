// Screening in live mode (product §21): a payment's screening attempts and reason, and the operator's decisions on flagged invoices.
import type { Kysely } from "kysely";

export const screening = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .alterTable("invoice_payments")
      .addColumn("screening_attempts", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    // When an unscreened payment (aml_status `unscreened`) is tried again.
    await db.schema.alterTable("invoice_payments").addColumn("screen_after", "text").execute();
    // Why screening flagged it: `listed`, or `screening_unavailable` after the last attempt.
    await db.schema.alterTable("invoice_payments").addColumn("screening_reason", "text").execute();
    await db.schema
      .createIndex("invoice_payments_unscreened")
      .on("invoice_payments")
      .columns(["aml_status", "screen_after"])
      .execute();
    // The operator's decisions (POST /admin/v1/invoices/{id}/aml): the audit of who decided what, when.
    await db.schema
      .createTable("aml_decisions")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("invoice_id", "text", (c) => c.notNull().references("invoices.id"))
      .addColumn("decision", "text", (c) => c.notNull())
      .addColumn("actor", "text", (c) => c.notNull())
      .addColumn("status_after", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("aml_decisions_invoice").on("aml_decisions").column("invoice_id").execute();
  },
};
