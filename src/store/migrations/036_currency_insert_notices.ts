// PostgreSQL only: a new catalog entry is announced on `read_cache`, so another process's cached group of a currency's entries (product §23) drops at once instead of within the cache's TTL.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * Migration 016 announced updates and deletes of currencies only: an absent row is never cached.
 * A currency's group of entries (store/currencies.ts entriesOf) is cached under its ticker, and a new
 * entry changes that group, so an insert is announced too, with the same function (`currencies:` and
 * the new row's ticker; the processes drop every cached group on any currency notice).
 */
export function currencyInsertNotices(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== "postgres") return;
      await sql`create trigger read_cache_currencies_insert after insert on currencies
        for each row execute function read_cache_notify_currencies()`.execute(db);
    },
  };
}
