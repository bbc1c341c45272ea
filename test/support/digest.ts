// A digest of everything in a store: equal digests before and after a request mean it changed nothing.
import { createHash } from "node:crypto";
import { sql } from "kysely";
import type { Store } from "../../src/store/store.ts";

/**
 * Tables and columns that record facts about requests rather than business state: attempts counted
 * by the throttles and failed sign-ins without an account, when an API key was last used, when a
 * session was last seen. A refused request may write them; it still changes nothing a merchant owns.
 */
const IGNORED_TABLES = new Set([
  "kysely_migration",
  "kysely_migration_lock",
  "throttle_counters",
  "signin_failures_unattributed",
]);
const IGNORED_COLUMNS: Record<string, string[]> = {
  api_keys: ["last_used_at", "last_used_from"],
  dashboard_sessions: ["last_seen_at"],
};

export async function storeDigest(store: Store): Promise<string> {
  const tables = (await store.db.introspection.getTables())
    .map((t) => t.name)
    .filter((name) => !IGNORED_TABLES.has(name))
    .sort();
  const hash = createHash("sha256");
  for (const table of tables) {
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(store.db);
    const lines = rows.rows.map((row) => {
      for (const column of IGNORED_COLUMNS[table] ?? []) delete row[column];
      return JSON.stringify(row, (_key, value) => (typeof value === "bigint" ? value.toString() : value));
    });
    lines.sort();
    hash.update(`${table}\n${lines.join("\n")}\n`);
  }
  return hash.digest("hex");
}
