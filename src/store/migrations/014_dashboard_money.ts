// The dashboard's money actions (product §14): withdrawal methods that can be disabled or wait out a cooling-off, and the ledger read per balance.
import type { Kysely } from "kysely";

export const dashboardMoney = {
  async up(db: Kysely<unknown>): Promise<void> {
    // Set once a method is disabled; a disabled method takes no new withdrawal.
    await db.schema.alterTable("withdrawal_methods").addColumn("disabled_at", "text").execute();
    // The first time a method takes withdrawals (the dashboard's cooling-off); null: at once.
    await db.schema.alterTable("withdrawal_methods").addColumn("usable_from", "text").execute();
    // `operator` (operator API, seed) or `dashboard` (added by an owner).
    await db.schema
      .alterTable("withdrawal_methods")
      .addColumn("added_by", "text", (c) => c.notNull().defaultTo("operator"))
      .execute();
    // A balance's entries page by id (keyset), newest first.
    await db.schema
      .createIndex("ledger_entries_account_id")
      .on("ledger_entries")
      .columns(["account", "currency", "id"])
      .execute();
  },
};
