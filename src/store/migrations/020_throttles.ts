// Throttles counted before they are evaluated (product §18): atomic attempt counters, single-use TOTP steps, sign-in failures without an account.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

export function throttles(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await attemptCounters(db, dialect);
      // RFC 6238 §5.2: the last time step accepted per user; a code of that step or an earlier one is refused.
      await db.schema
        .createTable("dashboard_totp_steps")
        .addColumn("user_id", "text", (c) => c.primaryKey())
        .addColumn("last_step", "integer", (c) => c.notNull())
        .execute();
      // Failed sign-ins for an email that has no account: no merchant to file them under, so the
      // client address alone is kept (the typed email is not: it may be a mistyped password).
      await db.schema
        .createTable("signin_failures_unattributed")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("address", "text", (c) => c.notNull())
        .addColumn("created_at", "text", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("signin_failures_unattributed_created")
        .on("signin_failures_unattributed")
        .column("created_at")
        .execute();
    },
  };
}

async function attemptCounters(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  // One fixed window per subject (`signin:account:<email>`, `admin_token:address:<ip>`, …). An attempt
  // is reserved by one upsert that answers the new count, so parallel attempts (in any process)
  // each get a distinct number and only those within the limit are evaluated.
  // PostgreSQL: UNLOGGED, so a reservation's commit waits for no WAL flush. Parallel attempts on
  // one subject queue on its row lock, which a transaction holds until its commit: with a flush
  // per commit, 120 guesses from one address waited for 120 fsyncs in a row. The price: after a
  // crash of the database server the table is empty (every window starts again).
  await db.schema
    .createTable("throttle_counters")
    .$call((b) => (dialect === "postgres" ? b.modifyFront(sql`unlogged`) : b))
    .addColumn("subject", "text", (c) => c.primaryKey())
    .addColumn("window_started_at", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .execute();
  // Expired windows are deleted by age.
  await db.schema.createIndex("throttle_counters_window").on("throttle_counters").column("window_started_at").execute();
  // The sign-in throttle's rows (migration 010) are replaced by the counters above.
  await db.schema.dropTable("dashboard_signin_failures").execute();
}
