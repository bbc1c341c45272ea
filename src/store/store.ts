// Opens a store (embedded SQLite or PostgreSQL) through Kysely and brings its schema up to date.
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import {
  Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  PostgresDialect,
  type PostgresPool,
  type PostgresPoolClient,
  SqliteDialect,
} from "kysely";
import type { Pool as PgPool, PoolClient as PgPoolClient } from "pg";
import { CHECKPOINT_INTERVAL_MS, startCheckpointer, WAL_RESTART_FRAMES } from "./checkpointer.ts";
import { type Dialect, dialectOf } from "./dialect.ts";
import { GroupCommitter } from "./groupCommit.ts";
import { foundation } from "./migrations/001_foundation.ts";
import { invoices } from "./migrations/002_invoices.ts";
import { signedOperations } from "./migrations/003_signed_operations.ts";
import { callbacks } from "./migrations/004_callbacks.ts";
import { refunds } from "./migrations/005_refunds.ts";
import { writePathIndexes } from "./migrations/006_write_path_indexes.ts";
import { merchantEmailCase } from "./migrations/007_merchant_email_case.ts";
import { dashboard } from "./migrations/010_dashboard.ts";
import { merchantApiExtensions } from "./migrations/011_merchant_api_extensions.ts";
import { evm } from "./migrations/012_evm.ts";
import { chainPayouts } from "./migrations/013_chain_payouts.ts";
import { dashboardMoney } from "./migrations/014_dashboard_money.ts";
import { dashboardLists } from "./migrations/015_dashboard_lists.ts";
import { postgresFastPaths } from "./migrations/016_postgres_fast_paths.ts";
import { liveDepositIndexes } from "./migrations/017_live_deposit_indexes.ts";
import { hotNonceAddress } from "./migrations/018_hot_nonce_address.ts";
import { apiKeyUseNotices } from "./migrations/019_api_key_use_notices.ts";
import { throttles } from "./migrations/020_throttles.ts";
import { dashboardMemberships } from "./migrations/021_dashboard_memberships.ts";
import { chainFaults } from "./migrations/022_chain_faults.ts";
import { retention } from "./migrations/023_retention.ts";
import { refundsAndPaymentLinks } from "./migrations/024_refunds_and_payment_links.ts";
import { rates } from "./migrations/025_rates.ts";
import { cardPayments } from "./migrations/026_card_payments.ts";
import { sweepFundings } from "./migrations/027_sweep_fundings.ts";
import { payoutRails } from "./migrations/028_payout_rails.ts";
import { currencyNetworks } from "./migrations/029_currency_networks.ts";
import { screening } from "./migrations/030_screening.ts";
import { forwarders } from "./migrations/031_forwarders.ts";
import { flushes } from "./migrations/032_flushes.ts";
import { strayPayments } from "./migrations/033_stray_payments.ts";
import { factoryDeployments } from "./migrations/035_factory_deployments.ts";
import { currencyInsertNotices } from "./migrations/036_currency_insert_notices.ts";
import { amlPaymentDecisions } from "./migrations/037_aml_payment_decisions.ts";
import { flushDepositRetries } from "./migrations/038_flush_deposit_retries.ts";
import { disputeProviderAmount } from "./migrations/039_dispute_provider_amount.ts";
import { hotTransactions } from "./migrations/040_hot_transactions.ts";
import { flushTransactions } from "./migrations/041_flush_transactions.ts";
import { fundingTransactions } from "./migrations/042_funding_transactions.ts";
import { walletAuthorizations } from "./migrations/043_wallet_authorizations.ts";
import { subscriptions } from "./migrations/044_subscriptions.ts";
import { renewalAuthorizations } from "./migrations/045_renewal_authorizations.ts";
import { scopedKeys } from "./migrations/046_scoped_keys.ts";
import { payoutApprovals } from "./migrations/047_payout_approvals.ts";
import { depositAddresses } from "./migrations/048_deposit_addresses.ts";
import { depositScreening } from "./migrations/049_deposit_screening.ts";
import { velocitySpends } from "./migrations/051_velocity_spends.ts";
import { acceptWithdrawalPolicyGuard } from "./migrations/055_accept_withdrawal_policy_guard.ts";
import { depositRefunds } from "./migrations/056_deposit_refunds.ts";
import { strayRecoveries } from "./migrations/057_stray_recoveries.ts";
import { strayPaymentsByAddress } from "./migrations/058_stray_payments_by_address.ts";
import { PREPARED_MARKER } from "./prepared.ts";
import { ReadCache } from "./readCache.ts";
import type { Database } from "./schema.ts";
import {
  cachedTablesWritten,
  listenForChanges,
  SHARED_CACHE_ENTRIES,
  SHARED_CACHE_TTL_MS,
  SharedReadCache,
} from "./sharedCache.ts";
import type { Tx } from "./tx.ts";
import { StoreUnavailableError } from "./unavailable.ts";
import { WalSync, walFileSync } from "./walSync.ts";

export type { Tx } from "./tx.ts";

export interface Store extends Tx {
  /** Runs `work` in one database transaction; it commits when `work` resolves and rolls back when it throws. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Checks that the database answers (readiness). */
  ping(): Promise<void>;
  /**
   * SQLite: null when everything committed so far is on disk, else a promise of the fsync that
   * makes it so. Answers wait on it, so no answer reports state a power loss could take back.
   * PostgreSQL commits are durable when they return: always null.
   */
  durable(): Promise<void> | null;
  close(): Promise<void>;
  /** PostgreSQL only: the pool's connections now (metrics). */
  poolUse?(): { total: number; idle: number; waiting: number };
  /** SQLite only: transactions waiting for the group committer (metrics). */
  commitQueueLength?(): number;
}

export interface StoreOptions {
  /** PostgreSQL pool size per process. */
  poolSize?: number;
  /**
   * SQLite durability: FULL (default) puts every commit on disk before anything that depends on it
   * is answered (a WAL fsync off the event loop, shared by all commits before it); NORMAL never
   * fsyncs on commit and exists only to measure what FULL costs.
   */
  sqliteSynchronous?: "FULL" | "NORMAL";
  /** Tests: replaces the WAL fsync, to hold or fail it. */
  walSync?: (sync: () => Promise<void>) => Promise<void>;
  /**
   * Called once when a WAL fsync fails. From then on every transaction and answer fails, since what
   * was committed may never reach the disk. Default: report on stderr and exit, so that the restarted
   * process recovers from what the disk really holds (as PostgreSQL does with data_sync_retry=off).
   */
  onDurabilityLost?: (error: unknown) => void;
  /** Tests: the WAL length (frames) at which the writer pauses for a checkpoint to restart it. */
  walRestartFrames?: number;
  /**
   * Tests: how long PostgreSQL's read cache serves a row (default SHARED_CACHE_TTL_MS), so that a
   * test counting statements is not undone by a slow machine letting its entries expire.
   */
  sharedCacheTtlMs?: number;
}

/** Every migration of the schema, by name, in order (exported for the upgrade tests). */
export function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    "001_foundation": foundation(dialect),
    "002_invoices": invoices,
    "003_signed_operations": signedOperations,
    "004_callbacks": callbacks(dialect),
    "005_refunds": refunds,
    "006_write_path_indexes": writePathIndexes,
    "007_merchant_email_case": merchantEmailCase,
    "010_dashboard": dashboard,
    "011_merchant_api_extensions": merchantApiExtensions(dialect),
    "012_evm": evm(dialect),
    "013_chain_payouts": chainPayouts,
    "014_dashboard_money": dashboardMoney,
    "015_dashboard_lists": dashboardLists,
    "016_postgres_fast_paths": postgresFastPaths(dialect),
    "017_live_deposit_indexes": liveDepositIndexes,
    "018_hot_nonce_address": hotNonceAddress,
    "019_api_key_use_notices": apiKeyUseNotices(dialect),
    "020_throttles": throttles(dialect),
    "021_dashboard_memberships": dashboardMemberships,
    "022_chain_faults": chainFaults,
    "023_retention": retention,
    "024_refunds_and_payment_links": refundsAndPaymentLinks,
    "025_rates": rates,
    "026_card_payments": cardPayments,
    "027_sweep_fundings": sweepFundings,
    "028_payout_rails": payoutRails(dialect),
    "029_currency_networks": currencyNetworks,
    "030_screening": screening,
    "031_forwarders": forwarders,
    "032_flushes": flushes,
    "033_stray_payments": strayPayments,
    "035_factory_deployments": factoryDeployments,
    "036_currency_insert_notices": currencyInsertNotices(dialect),
    "037_aml_payment_decisions": amlPaymentDecisions,
    "038_flush_deposit_retries": flushDepositRetries,
    "039_dispute_provider_amount": disputeProviderAmount,
    "040_hot_transactions": hotTransactions,
    "041_flush_transactions": flushTransactions(dialect),
    "042_funding_transactions": fundingTransactions,
    "043_wallet_authorizations": walletAuthorizations,
    "044_subscriptions": subscriptions,
    "045_renewal_authorizations": renewalAuthorizations,
    "046_scoped_keys": scopedKeys(dialect),
    "047_payout_approvals": payoutApprovals,
    "048_deposit_addresses": depositAddresses(dialect),
    "049_deposit_screening": depositScreening,
    "051_velocity_spends": velocitySpends,
    "055_accept_withdrawal_policy_guard": acceptWithdrawalPolicyGuard(dialect),
    "056_deposit_refunds": depositRefunds(dialect),
    "057_stray_recoveries": strayRecoveries(dialect),
    "058_stray_payments_by_address": strayPaymentsByAddress,
  };
}

/**
 * Page cache per SQLite connection, in KiB: SQLite's own default. better-sqlite3 builds SQLite with
 * 16 MiB a connection, and the writer's and the reader's caches filled as the bench's database grew:
 * peak RSS 155 MiB against 138 with 2 MiB each, at the same throughput (docs/performance.md,
 * "Memory"). The operating system's page cache still holds the file; a miss costs a read call.
 */
export const SQLITE_PAGE_CACHE_KIB = 2048;

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

function openSqlite(path: string, role: "writer" | "reader"): SQLite.Database {
  const database = new SQLite(path);
  if (role === "writer") {
    database.pragma("journal_mode = WAL");
    // Commits write the WAL without an fsync; WalSync fsyncs it, off the event loop, before answers.
    database.pragma("synchronous = NORMAL");
    // Checkpoints run in a worker thread (checkpointer.ts): a commit never copies pages or fsyncs here.
    database.pragma("wal_autocheckpoint = 0");
    // A WAL that grew long (a reader held a restart off) is cut back when it next starts again.
    database.pragma(`journal_size_limit = ${2 * WAL_RESTART_FRAMES * 4096}`);
    database.pragma("foreign_keys = ON");
    // Each request of a group commit runs in a savepoint, whose undo copies (the sub-journal) would
    // otherwise spill to a temporary file: writing it was a tenth of a withdrawal's CPU time.
    database.pragma("temp_store = MEMORY");
  } else {
    database.pragma("query_only = ON");
  }
  database.pragma("busy_timeout = 5000");
  database.pragma(`cache_size = -${SQLITE_PAGE_CACHE_KIB}`);
  cachePreparedStatements(database);
  return database;
}

async function migrate(db: Kysely<Database>, dialect: Dialect): Promise<void> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(dialect) };
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    await db.destroy();
    const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "unknown";
    throw new Error(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function exitOnDurabilityLost(error: unknown): void {
  process.stderr.write(
    `FATAL: fsync of the SQLite WAL failed (${error instanceof Error ? error.message : String(error)}); ` +
      "exiting so that a restart recovers from what is on disk\n",
  );
  process.exit(70);
}

// longer than 70 lines: the writer, the reader, the migration, the caches and the group committer are
// built in dependency order and closed together on failure; split, half-built handles would travel.
async function openSqliteStore(databaseUrl: string, options: StoreOptions): Promise<Store> {
  const path = sqlitePath(databaseUrl);
  const inMemory = path === ":memory:";
  if (!inMemory) mkdirSync(dirname(path), { recursive: true });
  const writer = openSqlite(path, "writer");
  const writeDb = new Kysely<Database>({ dialect: new SqliteDialect({ database: writer }) });
  await migrate(writeDb, "sqlite");
  // An in-memory database is private to its connection: no second connection, nothing to fsync.
  const reader = inMemory ? null : openSqlite(path, "reader");
  // Outside transactions the store only reads (query-only connection): every write goes through the
  // group committer, whose callers continue only once it is on disk.
  const db = reader ? new Kysely<Database>({ dialect: new SqliteDialect({ database: reader }) }) : writeDb;
  const fileSync = inMemory ? null : walFileSync(path);
  const checkpointer = inMemory
    ? null
    : startCheckpointer(
        path,
        {
          onError: (message) => process.emitWarning(message, "SQLiteCheckpointWarning"),
          onLost: () => {
            process.emitWarning("the checkpoint worker ended: the writer checkpoints again", "SQLiteCheckpointWarning");
            if (writer.open) writer.pragma("wal_autocheckpoint = 1000");
          },
        },
        CHECKPOINT_INTERVAL_MS,
        options.walRestartFrames ?? WAL_RESTART_FRAMES,
      );
  const fsync = fileSync
    ? options.walSync
      ? () => (options.walSync as NonNullable<StoreOptions["walSync"]>)(fileSync.sync)
      : fileSync.sync
    : null;
  let closed = false;
  // The store writes only through its committer (its own reads are query-only), so the committer's
  // count of commits is the version of the committed state; it costs nothing to read before answers.
  let walSync: WalSync | null = null;
  const durable = () => (closed ? null : (walSync?.barrier() ?? null));
  const cache = new ReadCache(writer);
  const committer = new GroupCommitter(writeDb, writer, durable, cache, {
    syncing: () => walSync?.inFlight() ?? null,
    beforeBatch: () => (checkpointer?.restartWanted() ? checkpointer.catchUp() : null),
  });
  if (fsync && (options.sqliteSynchronous ?? "FULL") === "FULL") {
    walSync = new WalSync(
      { committedVersion: () => committer.commits, sync: fsync },
      options.onDurabilityLost ?? exitOnDurabilityLost,
    );
  }
  return {
    db,
    dialect: "sqlite",
    ...(reader ? { sqlite: reader } : {}),
    cache,
    transaction: (work) => committer.run(work),
    commitQueueLength: () => committer.queued,
    durable,
    ping: async () => {
      // A closed better-sqlite3 handle may still run statements it had prepared: ask the flag first.
      if (closed) throw new Error("the store is closed");
      await db.selectFrom("settings").select("key").limit(1).execute();
    },
    close: async () => {
      committer.close();
      try {
        // Whatever was committed reaches the disk before the files are closed.
        await committer.drained();
        await durable();
      } finally {
        // Even when durability was lost (the fsync failure is reported by rejecting), the files close.
        closed = true;
        await checkpointer?.stop();
        if (db !== writeDb) await db.destroy();
        await writeDb.destroy();
        await fileSync?.close();
      }
    },
  };
}

/**
 * PostgreSQL parses and plans every unnamed statement anew. Queries that prepared.ts marks run as
 * named statements instead: each connection prepares one once and reuses its plan. The name is a
 * hash of the SQL text, so one text always has one name.
 */
function namingPreparedStatements(pool: PgPool, cache: SharedReadCache): PostgresPool {
  const names = new Map<string, string>();
  const nameOf = (text: string): string => {
    let name = names.get(text);
    if (name === undefined) {
      name = `k${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
      names.set(text, name);
    }
    return name;
  };
  const wrapped = new WeakMap<PgPoolClient, PostgresPoolClient>();
  return {
    connect: async () => {
      let client: PgPoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        // Whatever stops a connection (refused, unreachable, the database not accepting
        // connections, the connect timeout) is the database being unavailable, not a bad request.
        // The driver's reason is kept in the message (never the password: pg does not put it there), so a
        // refused start says why, e.g. "The server does not support SSL connections" for sslmode=verify-full.
        const reason = error instanceof Error ? `: ${error.message}` : "";
        throw new StoreUnavailableError(`cannot connect to PostgreSQL${reason}`, { cause: error });
      }
      let wrapper = wrapped.get(client);
      if (!wrapper) {
        // A plan the server no longer accepts (a migration changed a table's columns: 0A000) or a
        // statement it no longer has (26000): this query fails, and the connection is discarded on
        // release, so the next one prepares afresh.
        let stale = false;
        // Cached tables this connection wrote since it was checked out: the cache keeps none of
        // their rows until the release (sharedCache.ts), which follows the commit or rollback.
        let written: ReturnType<typeof cachedTablesWritten> = [];
        wrapper = {
          query: ((text: string, values: unknown[]) => {
            // Reads are most statements: only a text naming a write is searched further.
            if (/insert|update|delete/i.test(text)) {
              const tables = cachedTablesWritten(text).filter((t) => !written.includes(t));
              if (tables.length > 0) {
                cache.writing(tables);
                written = [...written, ...tables];
              }
            }
            return text.startsWith(PREPARED_MARKER)
              ? client.query({ name: nameOf(text), text, values }).catch((error: { code?: string }) => {
                  if (error?.code === "0A000" || error?.code === "26000") stale = true;
                  throw error;
                })
              : client.query(text, values);
          }) as unknown as PostgresPoolClient["query"],
          release: () => {
            if (written.length > 0) {
              cache.ended(written);
              written = [];
            }
            client.release(stale ? new Error("prepared statements out of date") : undefined);
          },
        };
        wrapped.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

/** How long getting a PostgreSQL connection may take before the request fails with 503. */
export const POSTGRES_CONNECT_TIMEOUT_MS = 5000;

/**
 * A pg client emits `error` when its connection dies (a terminated backend, a server restart, a
 * cut link), and an `error` event nobody listens to ends the process. The pool listens only while
 * a client is idle; a client checked out by a request (or between two queries of a transaction)
 * had no listener. Every client gets one for its whole life: the query in flight fails (the
 * request answers 503 and its transaction is rolled back by the server), and the pool discards the
 * broken client when it is released, so the next request gets a new connection.
 * Any other pg.Pool or pg.Client the service creates must go through here (or listen likewise).
 */
export function guardPoolConnections(pool: PgPool, onLost: (error: Error) => void = () => {}): void {
  pool.on("error", (error) => onLost(error));
  pool.on("connect", (client) => {
    client.on("error", (error) => onLost(error));
  });
}

export async function openStore(databaseUrl: string, options: StoreOptions = {}): Promise<Store> {
  const dialect = dialectOf(databaseUrl);
  if (dialect === "sqlite") return openSqliteStore(databaseUrl, options);
  // Loaded only for PostgreSQL: a SQLite process does not pay for the driver.
  const { default: pg } = await import("pg");
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    // Bounds: a connect to an unreachable server fails (503) instead of waiting forever, and TCP
    // keepalive notices a cut link on a connection that waits for the server.
    connectionTimeoutMillis: POSTGRES_CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  guardPoolConnections(pool);
  const cache = new SharedReadCache(SHARED_CACHE_ENTRIES, options.sharedCacheTtlMs ?? SHARED_CACHE_TTL_MS);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: namingPreparedStatements(pool, cache) }) });
  await migrate(db, dialect);
  const listener = listenForChanges(databaseUrl, cache, pg);
  return {
    db,
    dialect,
    cache,
    transaction: (work) => db.transaction().execute((trx) => work({ db: trx, dialect })),
    durable: () => null,
    ping: async () => {
      await db.selectFrom("settings").select("key").limit(1).execute();
    },
    close: async () => {
      await listener.close();
      await db.destroy();
    },
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };
}

export function nowIso(): string {
  return new Date().toISOString();
}
