// The operator's retries of failed flush deposits (issue 36): the audit of POST /admin/v1/flush-deposits/{paymentId}/retry.
import type { Kysely } from "kysely";

export const flushDepositRetries = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("flush_deposit_retries")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("deposit_id", "text", (c) => c.notNull().references("flush_deposits.id"))
      .addColumn("payment_id", "text", (c) => c.notNull())
      // Who asked (the operator API: `operator`).
      .addColumn("actor", "text", (c) => c.notNull())
      // What the deposit had when it was put back to waiting: its attempts and why the last one failed.
      .addColumn("attempts_before", "integer", (c) => c.notNull())
      .addColumn("last_error_before", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("flush_deposit_retries_deposit")
      .on("flush_deposit_retries")
      .column("deposit_id")
      .execute();
  },
};
