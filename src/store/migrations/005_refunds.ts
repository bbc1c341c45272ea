// Refunds: one row per accepted RefundCrypto or RefundFiat, at most one live (processing or completed) refund per invoice.
import { type Kysely, sql } from "kysely";

export const refunds = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("refunds")
      // The request id (lowercased), also the id of the refund's payout.
      .addColumn("request_id", "text", (c) => c.primaryKey().references("signed_requests.request_id"))
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("invoice_id", "text", (c) => c.notNull().references("invoices.id"))
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("currency", "text", (c) => c.notNull().references("currencies.ticker"))
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("debit_currency", "text", (c) => c.notNull().references("currencies.ticker"))
      .addColumn("debit_amount", "text", (c) => c.notNull())
      .addColumn("to_address", "text")
      .addColumn("withdraw_to_same_address", "integer", (c) => c.notNull())
      .addColumn("reason", "text")
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    // Interface fact 2 held by the database itself, whatever the code above it does: an invoice
    // has at most one refund that is not failed. A failed refund leaves room for a new one.
    await db.schema
      .createIndex("refunds_live_per_invoice")
      .on("refunds")
      .column("invoice_id")
      .unique()
      .where(sql.ref("status"), "<>", "failed")
      .execute();
    await db.schema.createIndex("refunds_merchant").on("refunds").column("merchant_id").execute();
  },
};
