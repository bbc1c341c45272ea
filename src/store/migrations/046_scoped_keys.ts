// Scoped API keys (product §31): a key's scopes and client address ranges (null: a full key, from anywhere; every earlier key), and where it was last used from.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

export function scopedKeys(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      // JSON arrays as text: a key's scopes and CIDR ranges, read with the key on each lookup.
      await db.schema.alterTable("api_keys").addColumn("scopes", "text").execute();
      await db.schema.alterTable("api_keys").addColumn("allowed_addresses", "text").execute();
      await db.schema.alterTable("api_keys").addColumn("last_used_from", "text").execute();
      if (dialect !== "postgres") return;
      // As migration 019: the last use (now its time and address) is not cached, so not announced.
      await sql`drop trigger read_cache_api_keys_update on api_keys`.execute(db);
      await sql`create trigger read_cache_api_keys_update after update on api_keys
        for each row
        when ((to_jsonb(old) - 'last_used_at' - 'last_used_from')
          is distinct from (to_jsonb(new) - 'last_used_at' - 'last_used_from'))
        execute function read_cache_notify_api_keys()`.execute(db);
    },
  };
}
