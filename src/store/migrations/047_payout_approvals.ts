// Payout policies and approvals (product §31): a merchant's limits per currency, the payouts waiting for approvals and each approver's decision, and the operator's velocity cap per network.
import type { Kysely } from "kysely";

export const payoutApprovals = {
  async up(db: Kysely<unknown>): Promise<void> {
    // Limits in the currency's minor units (text, like every amount); null: no such limit.
    await db.schema
      .createTable("payout_policies")
      .addColumn("merchant_id", "text", (c) => c.notNull())
      .addColumn("currency", "text", (c) => c.notNull())
      .addColumn("per_payout_limit", "text")
      .addColumn("daily_limit", "text")
      .addColumn("approvals_required", "integer", (c) => c.notNull())
      // A loosening waits out the cooling-off: these replace the limits above from pending_effective_at.
      .addColumn("pending_per_payout_limit", "text")
      .addColumn("pending_daily_limit", "text")
      .addColumn("pending_approvals_required", "integer")
      .addColumn("pending_effective_at", "text")
      .addColumn("updated_at", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("payout_policies_pk", ["merchant_id", "currency"])
      .execute();
    // One row per payout accepted as awaiting_approval: what it needs, who asked for it, how it ended.
    await db.schema
      .createTable("payout_approval_requests")
      .addColumn("request_id", "text", (c) => c.primaryKey())
      .addColumn("merchant_id", "text", (c) => c.notNull())
      .addColumn("approvals_required", "integer", (c) => c.notNull())
      .addColumn("reason", "text", (c) => c.notNull())
      // The dashboard user who made the payout (never counts as its approver); null: made with an API key.
      .addColumn("initiator_user_id", "text")
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("decided_at", "text")
      .execute();
    await db.schema
      .createIndex("payout_approval_requests_open")
      .on("payout_approval_requests")
      .columns(["merchant_id", "state", "created_at"])
      .execute();
    // Each approver decides once per payout, however many clicks arrive in parallel.
    await db.schema
      .createTable("payout_approvals")
      .addColumn("request_id", "text", (c) => c.notNull())
      .addColumn("user_id", "text", (c) => c.notNull())
      .addColumn("decision", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint("payout_approvals_pk", ["request_id", "user_id"])
      .execute();
    // The rolling 24-hour sum of a merchant's payouts in one currency.
    await db.schema
      .createIndex("payouts_merchant_window")
      .on("payouts")
      .columns(["merchant_id", "currency", "created_at"])
      .execute();
    // The operator's cap on what the hot wallet pays out per network in 24 hours, in USD cents.
    await db.schema
      .createTable("network_velocity_caps")
      .addColumn("network", "text", (c) => c.primaryKey())
      .addColumn("usd_cents", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
  },
};
