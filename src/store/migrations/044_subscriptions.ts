// Subscriptions (product §29): a merchant's plans, its customers' subscriptions, and the invoice each period is paid by.
import type { Kysely } from "kysely";

export const subscriptions = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("plans")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("merchant_id", "text", (c) => c.notNull())
      .addColumn("name", "text", (c) => c.notNull())
      .addColumn("currency", "text", (c) => c.notNull())
      // Minor units of the currency, as text (bigint).
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("interval", "text", (c) => c.notNull())
      .addColumn("interval_count", "integer", (c) => c.notNull())
      .addColumn("trial_days", "integer", (c) => c.notNull())
      .addColumn("grace_days", "integer", (c) => c.notNull())
      .addColumn("renewal_notice_days", "integer", (c) => c.notNull())
      .addColumn("active", "integer", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("plans_merchant").on("plans").columns(["merchant_id", "created_at", "id"]).execute();
    await createSubscriptions(db);
  },
};

async function createSubscriptions(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("subscriptions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("merchant_id", "text", (c) => c.notNull())
    .addColumn("plan_id", "text", (c) => c.notNull())
    .addColumn("next_plan_id", "text")
    .addColumn("next_plan_period", "integer")
    .addColumn("customer_reference", "text", (c) => c.notNull())
    .addColumn("customer_email", "text")
    .addColumn("callback_url", "text")
    .addColumn("status", "text", (c) => c.notNull())
    // Period k (k ≥ anchor_period) starts at anchor_at plus (k − anchor_period) intervals of the plan.
    .addColumn("anchor_at", "text", (c) => c.notNull())
    .addColumn("anchor_period", "integer", (c) => c.notNull())
    .addColumn("period", "integer", (c) => c.notNull())
    .addColumn("current_period_start", "text", (c) => c.notNull())
    .addColumn("current_period_end", "text", (c) => c.notNull())
    .addColumn("trial_end", "text")
    .addColumn("paid_period", "integer", (c) => c.notNull())
    .addColumn("invoiced_period", "integer", (c) => c.notNull())
    .addColumn("open_invoice_id", "text")
    .addColumn("cancel_at_period_end", "integer", (c) => c.notNull())
    .addColumn("canceled_at", "text")
    // When the schedule next has something to do (null: nothing ever again); the worker polls it.
    .addColumn("run_at", "text")
    // A sandbox test clock: the subscription's frozen time (null: it runs on real time).
    .addColumn("test_clock", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("subscriptions_merchant")
    .on("subscriptions")
    .columns(["merchant_id", "created_at", "id"])
    .execute();
  await db.schema.createIndex("subscriptions_due").on("subscriptions").columns(["run_at"]).execute();
  await db.schema
    .createTable("subscription_invoices")
    .addColumn("subscription_id", "text", (c) => c.notNull())
    .addColumn("period", "integer", (c) => c.notNull())
    .addColumn("invoice_id", "text", (c) => c.notNull())
    .addColumn("plan_id", "text", (c) => c.notNull())
    .addColumn("period_start", "text", (c) => c.notNull())
    .addColumn("period_end", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    // One invoice per period, however many workers run the schedule.
    .addPrimaryKeyConstraint("subscription_invoices_pk", ["subscription_id", "period"])
    .execute();
  await db.schema
    .createIndex("subscription_invoices_invoice")
    .on("subscription_invoices")
    .columns(["invoice_id"])
    .unique()
    .execute();
}
