// Card payments in live mode (product §20): one checkout per invoice, each provider event applied once, and disputes with their holds.
import type { Kysely } from "kysely";

export const cardPayments = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("card_checkouts")
      // One checkout per invoice: the row is written before the provider is asked, so every click
      // (and every process) asks with the same parameters and gets the same session back.
      .addColumn("invoice_id", "text", (c) => c.primaryKey().references("invoices.id"))
      .addColumn("provider", "text", (c) => c.notNull())
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("expires_at", "text", (c) => c.notNull())
      .addColumn("session_id", "text", (c) => c.unique())
      .addColumn("url", "text")
      // The provider's payment id once a payment was recorded: disputes and refunds name it.
      .addColumn("payment_id", "text", (c) => c.unique())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("card_provider_events")
      // The provider's event id: an event applied once, whatever the provider redelivers.
      .addColumn("event_id", "text", (c) => c.primaryKey())
      .addColumn("provider", "text", (c) => c.notNull())
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("outcome", "text", (c) => c.notNull())
      .addColumn("received_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createTable("card_disputes")
      .addColumn("dispute_id", "text", (c) => c.primaryKey())
      .addColumn("invoice_id", "text", (c) => c.notNull().references("invoices.id"))
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("payment_id", "text", (c) => c.notNull())
      // What the payer disputes, in the payment's currency and the catalog's minor units.
      .addColumn("currency", "text", (c) => c.notNull())
      .addColumn("amount", "text", (c) => c.notNull())
      // The hold, in the invoice's settlement currency: what the balance covered and what became a receivable.
      .addColumn("hold_currency", "text", (c) => c.notNull())
      .addColumn("held_amount", "text", (c) => c.notNull())
      .addColumn("receivable_amount", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("reason", "text", (c) => c.notNull())
      // null while open; `won` or `lost` once closed.
      .addColumn("outcome", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("card_disputes_invoice").on("card_disputes").column("invoice_id").execute();
    await db.schema
      .createIndex("card_disputes_merchant")
      .on("card_disputes")
      .columns(["merchant_id", "created_at"])
      .execute();
  },
};
