// Live rates and fixed quotes (product §22): each currency's rate source, the rates an invoice was quoted at, each payment's USD value at confirmation, and the last rate each feed gave.
import type { Kysely } from "kysely";

export const rates = {
  async up(db: Kysely<unknown>): Promise<void> {
    // Null: the entry's own rate_usd (a currency configured before rate sources: static).
    await db.schema.alterTable("currencies").addColumn("rate_source", "text").execute();
    // JSON list of the rates the invoice was created with; null for invoices made before quotes were
    // fixed (they keep converting at the catalog's rates, as they always did).
    await db.schema.alterTable("invoices").addColumn("quote_rates", "text").execute();
    // At confirmation: the USD value at the invoice's fixed rate, and the live rate and value beside it.
    await db.schema.alterTable("invoice_payments").addColumn("value_usd", "text").execute();
    await db.schema.alterTable("invoice_payments").addColumn("live_rate_usd", "text").execute();
    await db.schema.alterTable("invoice_payments").addColumn("live_value_usd", "text").execute();
    // The last reading of each currency's feed, shared by every process of the store.
    await db.schema
      .createTable("rate_readings")
      .addColumn("ticker", "text", (c) => c.primaryKey())
      .addColumn("source", "text", (c) => c.notNull())
      .addColumn("rate_usd", "text", (c) => c.notNull())
      .addColumn("feed_updated_at", "text", (c) => c.notNull())
      .addColumn("read_at", "text", (c) => c.notNull())
      .execute();
  },
};
