// The handle repositories take (a store or one of its transactions), apart from store.ts so that the modules store.ts builds on can name it.
import type SQLite from "better-sqlite3";
import type { Kysely } from "kysely";
import type { Dialect } from "./dialect.ts";
import type { RowCache } from "./readCache.ts";
import type { Database } from "./schema.ts";

/** A handle on the database that repositories take: the query builder and the dialect it speaks. */
export interface Tx {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  /**
   * SQLite only: the connection that prepared statements may run on synchronously, skipping
   * Kysely's executor. Inside a transaction it is the writing connection (the transaction holds
   * it); on the store it is a second, query-only connection that sees committed data, so reads
   * outside transactions never wait for a batch and never see its uncommitted writes.
   */
  readonly sqlite?: SQLite.Database;
  /**
   * Hot rows, which repositories read through. SQLite: kept exact by triggers (readCache.ts), on the
   * store and its transactions. PostgreSQL: on the store's own handle only (never inside a
   * transaction), kept fresh across processes by notices and a TTL (sharedCache.ts).
   */
  readonly cache?: RowCache;
}
