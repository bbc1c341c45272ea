// Product §25: several (partial) refunds per invoice, refunds claimed by the payer through a link, and payment links with the invoices they made.
import { type Kysely, sql } from "kysely";

export const refundsAndPaymentLinks = {
  // longer than 70 lines: a migration is the schema it creates, statement after statement in the order
  // they must run; it is frozen once released, so it is not restructured.
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .alterTable("refunds")
      // 1: made by POST /public/v1/refunds/create (several per invoice); 0: RefundCrypto, RefundFiat or a resolution.
      .addColumn("partial", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    // What the refund takes of the invoice's paid amount, in minor units of the invoice currency;
    // null for the refunds that return all of it (the interface's and resolutions).
    await db.schema.alterTable("refunds").addColumn("paid_share", "text").execute();
    // `merchant` or `payer` (partial refunds); null: nobody, the interface's refunds pay out in full.
    await db.schema.alterTable("refunds").addColumn("network_fee_paid_by", "text").execute();
    // Interface fact 2 stays in the database for the interface's refunds: at most one live refund
    // that is not partial per invoice. Partial refunds are bounded by what was paid, under the
    // invoice's row lock (their sum is not something an index can hold).
    await db.schema.dropIndex("refunds_live_per_invoice").execute();
    await db.schema
      .createIndex("refunds_live_full_per_invoice")
      .on("refunds")
      .column("invoice_id")
      .unique()
      .where(sql<boolean>`status <> 'failed' and partial = 0`)
      .execute();
    await db.schema.createIndex("refunds_invoice").on("refunds").column("invoice_id").execute();

    await db.schema
      .createTable("refund_claims")
      // The unguessable token of /refund/{token}: the capability to choose where the refund goes.
      .addColumn("token", "text", (c) => c.primaryKey())
      .addColumn("refund_id", "text", (c) => c.notNull().unique().references("refunds.request_id"))
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      // `open`, then `claimed` or `expired`, once.
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("expires_at", "text", (c) => c.notNull())
      .addColumn("address", "text")
      .addColumn("claimed_at", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("refund_claims_open_expiry")
      .on("refund_claims")
      .columns(["status", "expires_at"])
      .execute();

    await db.schema
      .createTable("payment_links")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("currency", "text", (c) => c.notNull().references("currencies.ticker"))
      // Minor units as text; a fixed amount, or bounds the payer chooses within.
      .addColumn("amount", "text")
      .addColumn("min_amount", "text")
      .addColumn("max_amount", "text")
      .addColumn("description", "text")
      .addColumn("callback_url", "text")
      .addColumn("success_url", "text")
      .addColumn("return_url", "text")
      .addColumn("fail_url", "text")
      .addColumn("active", "integer", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("payment_links_merchant_created")
      .on("payment_links")
      .columns(["merchant_id", "created_at", "id"])
      .execute();

    await db.schema
      .createTable("payment_link_invoices")
      .addColumn("link_id", "text", (c) => c.notNull().references("payment_links.id"))
      // The payer's browser session (a random cookie value): one invoice per link and session.
      .addColumn("session", "text", (c) => c.notNull())
      .addColumn("invoice_id", "text", (c) => c.notNull().unique().references("invoices.id"))
      .addColumn("created_at", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("payment_link_invoices_pk", ["link_id", "session"])
      .execute();
    await db.schema
      .createIndex("payment_link_invoices_created")
      .on("payment_link_invoices")
      .columns(["link_id", "created_at"])
      .execute();
  },
};
