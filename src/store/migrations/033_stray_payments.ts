// Stray payments (product §23): transfers to an invoice's deposit address that the invoice does not take (another network than an internalTicker invoice's, or another currency), kept for the operator and never credited.
import type { Kysely } from "kysely";

export const strayPayments = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("stray_payments")
      .addColumn("network", "text", (c) => c.notNull())
      // `<hash>` (native) or `<hash>:<logIndex>` (token), as invoice_payments.tx_id.
      .addColumn("tx_id", "text", (c) => c.notNull())
      .addColumn("invoice_id", "text", (c) => c.notNull().references("invoices.id"))
      // The catalog entry the transfer was in (its key), and its amount in that entry's own units.
      .addColumn("currency", "text", (c) => c.notNull().references("currencies.ticker"))
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("from_address", "text", (c) => c.notNull())
      .addColumn("block_number", "bigint", (c) => c.notNull())
      .addColumn("block_hash", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("stray_payments_pk", ["network", "tx_id"])
      .execute();
    await db.schema.createIndex("stray_payments_invoice").on("stray_payments").column("invoice_id").execute();
    await db.schema.createIndex("stray_payments_created").on("stray_payments").column("created_at").execute();
  },
};
