// PostgreSQL only: an API key's last-used time, written once a minute per key and process, no longer tells every process to drop the key.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * Migration 016's trigger announced every update of api_keys on `read_cache`. What the processes
 * cache for a key (its owner, kind and sealed secret) never includes `last_used_at`, so an update
 * that changes nothing else is not announced; a delete and any other update still are, with the
 * same function as before.
 */
export function apiKeyUseNotices(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== "postgres") return;
      await sql`drop trigger read_cache_api_keys on api_keys`.execute(db);
      await sql`create trigger read_cache_api_keys_delete after delete on api_keys
        for each row execute function read_cache_notify_api_keys()`.execute(db);
      await sql`create trigger read_cache_api_keys_update after update on api_keys
        for each row
        when ((to_jsonb(old) - 'last_used_at') is distinct from (to_jsonb(new) - 'last_used_at'))
        execute function read_cache_notify_api_keys()`.execute(db);
    },
  };
}
