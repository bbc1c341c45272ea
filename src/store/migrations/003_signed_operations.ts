// Signed operations: recorded request ids (safe retries), withdrawals, and the payouts that carry them out.
import type { Kysely } from "kysely";

export const signedOperations = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("signed_requests")
      // Lowercased: request ids match case-insensitively and are unique across the whole service.
      .addColumn("request_id", "text", (c) => c.primaryKey())
      .addColumn("request_id_sent", "text", (c) => c.notNull())
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("route", "text", (c) => c.notNull())
      .addColumn("body_hash", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("response_status", "integer")
      .addColumn("response_body", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("signed_requests_merchant").on("signed_requests").column("merchant_id").execute();

    await db.schema
      .createTable("withdrawals")
      .addColumn("request_id", "text", (c) => c.primaryKey().references("signed_requests.request_id"))
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("withdrawal_method_id", "integer", (c) => c.notNull().references("withdrawal_methods.id"))
      .addColumn("currency", "text", (c) => c.notNull().references("currencies.ticker"))
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("withdrawals_merchant").on("withdrawals").column("merchant_id").execute();

    await db.schema
      .createTable("payouts")
      .addColumn("request_id", "text", (c) => c.primaryKey().references("signed_requests.request_id"))
      .addColumn("operation", "text", (c) => c.notNull())
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("currency", "text", (c) => c.notNull().references("currencies.ticker"))
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("destination", "text", (c) => c.notNull())
      .addColumn("ledger_cause", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("processor", "text")
      .addColumn("processor_status", "text")
      .addColumn("processor_tx_id", "text")
      .addColumn("claim_token", "text")
      .addColumn("lease_until", "text")
      .addColumn("attempts", "integer", (c) => c.notNull())
      .addColumn("next_check_at", "text")
      .addColumn("last_error", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .addColumn("state_changed_at", "text", (c) => c.notNull())
      .addColumn("settled_at", "text")
      .execute();
    await db.schema.createIndex("payouts_state_created").on("payouts").columns(["state", "created_at"]).execute();
    await db.schema.createIndex("payouts_state_lease").on("payouts").columns(["state", "lease_until"]).execute();
    await db.schema.createIndex("payouts_state_check").on("payouts").columns(["state", "next_check_at"]).execute();
    await db.schema.createIndex("payouts_merchant").on("payouts").column("merchant_id").execute();
  },
};
