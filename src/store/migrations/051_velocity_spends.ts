// The operator's velocity cap (product §31): what each hot-wallet payout was worth in USD when it was signed, summed over the rolling 24 hours the cap counts.
import type { Kysely } from "kysely";

export const velocitySpends = {
  async up(db: Kysely<unknown>): Promise<void> {
    // One row per payout, written in the transaction that stores its first signed transaction (a
    // replacement carries the same payout, so it is not counted again). Cents as an integer: the sum
    // is exact in SQL on both stores.
    await db.schema
      .createTable("velocity_spends")
      .addColumn("request_id", "text", (c) => c.primaryKey())
      .addColumn("network", "text", (c) => c.notNull())
      .addColumn("usd_cents", "bigint", (c) => c.notNull())
      .addColumn("spent_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("velocity_spends_window")
      .on("velocity_spends")
      .columns(["network", "spent_at"])
      .execute();
  },
};
