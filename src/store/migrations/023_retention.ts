// Indexes for retention: the worker deletes callback attempts and dashboard audit rows older than their retention, oldest first.
import type { Kysely } from "kysely";

/**
 * The retention worker (workers/retention.ts) looks for the oldest rows by time in bounded
 * batches; without these indexes each batch would scan the whole table.
 */
export const retention = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.createIndex("callback_attempts_started_at").on("callback_attempts").column("started_at").execute();
    await db.schema.createIndex("dashboard_audit_created_at").on("dashboard_audit").column("created_at").execute();
  },
};
