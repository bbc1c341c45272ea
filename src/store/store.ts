// Opens a store (embedded SQLite or PostgreSQL) through Kysely and brings its schema up to date.
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, type Migration, type MigrationProvider, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { type Dialect, dialectOf } from "./dialect.ts";
import { GroupCommitter } from "./groupCommit.ts";
import { foundation } from "./migrations/001_foundation.ts";
import { invoices } from "./migrations/002_invoices.ts";
import { signedOperations } from "./migrations/003_signed_operations.ts";
import { callbacks } from "./migrations/004_callbacks.ts";
import { refunds } from "./migrations/005_refunds.ts";
import type { Database } from "./schema.ts";

/** A handle on the database that repositories take: the query builder and the dialect it speaks. */
export interface Tx {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
}

export interface Store extends Tx {
  /** Runs `work` in one database transaction; it commits when `work` resolves and rolls back when it throws. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Checks that the database answers (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  /** PostgreSQL pool size per process. */
  poolSize?: number;
  /** SQLite durability: FULL (default) fsyncs every commit; NORMAL exists only to measure what FULL costs. */
  sqliteSynchronous?: "FULL" | "NORMAL";
}

function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    "001_foundation": foundation(dialect),
    "002_invoices": invoices,
    "003_signed_operations": signedOperations,
    "004_callbacks": callbacks(dialect),
    "005_refunds": refunds,
  };
}

/** Prepared statements kept per SQL text; bounds the cache so varying `IN (…)` lists cannot grow it forever. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew, and preparing costs more than running a simple statement.
 * Kysely's SQL text is the same for every query of one shape (values are parameters), so a
 * statement can be reused: better-sqlite3 statements are reusable and run synchronously.
 */
function cachePreparedStatements(database: SQLite.Database): void {
  const prepare = database.prepare.bind(database);
  const cache = new Map<string, SQLite.Statement>();
  database.prepare = ((source: string) => {
    const cached = cache.get(source);
    if (cached) {
      // Most recently used last, so the oldest is the first key.
      cache.delete(source);
      cache.set(source, cached);
      return cached;
    }
    const statement = prepare(source);
    if (cache.size >= STATEMENT_CACHE_SIZE) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(source, statement);
    return statement;
  }) as typeof database.prepare;
}

export function sqlitePath(databaseUrl: string): string {
  return databaseUrl.slice("sqlite:".length);
}

export async function openStore(databaseUrl: string, options: StoreOptions = {}): Promise<Store> {
  const dialect = dialectOf(databaseUrl);
  let db: Kysely<Database>;
  if (dialect === "sqlite") {
    const path = sqlitePath(databaseUrl);
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    const database = new SQLite(path);
    database.pragma("journal_mode = WAL");
    // FULL: a committed transaction is on disk before we answer; money must not be lost to a crash.
    database.pragma(`synchronous = ${options.sqliteSynchronous ?? "FULL"}`);
    database.pragma("foreign_keys = ON");
    database.pragma("busy_timeout = 5000");
    cachePreparedStatements(database);
    db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  } else {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: options.poolSize ?? 10 });
    // An idle client losing its server must not crash the process; the next query reports it.
    pool.on("error", () => {});
    db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  }

  const provider: MigrationProvider = { getMigrations: async () => migrations(dialect) };
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    await db.destroy();
    const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "unknown";
    throw new Error(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`);
  }

  const committer = dialect === "sqlite" ? new GroupCommitter(db) : null;
  return {
    db,
    dialect,
    transaction: (work) =>
      committer ? committer.run(work) : db.transaction().execute((trx) => work({ db: trx, dialect })),
    ping: async () => {
      await db.selectFrom("settings").select("key").limit(1).execute();
    },
    close: () => db.destroy(),
  };
}

export function nowIso(): string {
  return new Date().toISOString();
}
