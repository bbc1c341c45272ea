// SQLite group commit: concurrent transactions share one real transaction and one fsync, each in its own savepoint.
import type SQLite from "better-sqlite3";
import type { Kysely } from "kysely";
import { invariantViolation } from "../domain/result.ts";
import type { ReadCache } from "./readCache.ts";
import type { Database } from "./schema.ts";
import type { Tx } from "./tx.ts";

interface Pending {
  work: (tx: Tx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** At most this many requests share one commit: bounds the latency one batch adds to its last member. */
export const MAX_BATCH = 64;

/**
 * Requests that arrive while a batch runs join the next batch: one BEGIN, a SAVEPOINT per request
 * (a failing request rolls back only itself), one COMMIT, and only then, once `durable` says the
 * commit is on disk, are the requests answered. The commit itself does not fsync (the WAL is
 * fsynced by WalSync in libuv's pool), so the next batch runs while the disk syncs the last one.
 * Work must only touch the database (no network I/O inside a transaction), as everywhere.
 */
export class GroupCommitter {
  readonly #db: Kysely<Database>;
  readonly #connection: SQLite.Database;
  readonly #durable: () => Promise<void> | null;
  readonly #queue: Pending[] = [];
  #draining = false;
  #commits = 0;

  readonly #cache: ReadCache;
  readonly #syncing: () => Promise<void> | null;
  readonly #beforeBatch: () => Promise<void> | null;
  /** Wakes an open batch that waits for requests (or for the fsync it waits behind). */
  #arrival: (() => void) | null = null;
  #drained: Promise<void> = Promise.resolve();
  #closed = false;

  /**
   * `syncing` answers the fsync in progress, if any: while the disk syncs one commit, the next batch
   * stays open and takes in the requests that arrive (they would wait for the next fsync anyway),
   * so one commit writes each page they share once, and fewer, fuller batches reach the disk.
   * `beforeBatch` may hold the next batch back for a moment without commits (a WAL restart).
   */
  constructor(
    db: Kysely<Database>,
    connection: SQLite.Database,
    durable: () => Promise<void> | null,
    cache: ReadCache,
    hooks: { syncing?: () => Promise<void> | null; beforeBatch?: () => Promise<void> | null } = {},
  ) {
    this.#db = db;
    this.#connection = connection;
    this.#durable = durable;
    this.#cache = cache;
    this.#syncing = hooks.syncing ?? (() => null);
    this.#beforeBatch = hooks.beforeBatch ?? (() => null);
  }

  /** Resolves once no batch is open or queued (the store waits for it before closing). */
  drained(): Promise<void> {
    return this.#drained;
  }

  /** How many batches committed so far: the version of the committed state this committer wrote. */
  get commits(): number {
    return this.#commits;
  }

  /** Transactions waiting for the next batch (metrics). */
  get queued(): number {
    return this.#queue.length;
  }

  /** Refuses work once the store is closing (see close()): nothing would ever commit it. */
  close(): void {
    this.#closed = true;
  }

  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.#closed) {
        reject(new Error("the store is closed"));
        return;
      }
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      const wake = this.#arrival;
      this.#arrival = null;
      wake?.();
      if (!this.#draining) this.#drained = this.#drain();
    });
  }

  // longer than 70 lines: the single writer's loop; commit, fsync and the hand-back of each batch's
  // answers share its state and their order is the durability argument (docs/performance.md).
  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      // Savepoints run as prepared statements on the connection the batch's transaction holds.
      const savepoint = this.#connection.prepare("savepoint request");
      const release = this.#connection.prepare("release request");
      const rollbackTo = this.#connection.prepare("rollback to request");
      while (this.#queue.length > 0) {
        // Let requests that are being parsed right now join this batch.
        await new Promise((resolve) => setImmediate(resolve));
        const held = this.#beforeBatch();
        if (held) await held;
        const batch = this.#queue.splice(0, MAX_BATCH);
        const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
        try {
          await this.#db.transaction().execute(async (trx) => {
            const tx: Tx = { db: trx, dialect: "sqlite", sqlite: this.#connection, cache: this.#cache };
            const runMembers = async (members: Pending[]) => {
              for (const pending of members) {
                savepoint.run();
                try {
                  const value = await pending.work(tx);
                  release.run();
                  outcomes.push({ ok: true, value });
                } catch (error) {
                  rollbackTo.run();
                  release.run();
                  outcomes.push({ ok: false, error });
                }
              }
            };
            await runMembers(batch);
            // Open while the previous commit's fsync runs, taking in what arrives meanwhile (bounded
            // by MAX_BATCH); committed once that fsync is over, so the next one starts at once.
            while (batch.length < MAX_BATCH) {
              const syncing = this.#syncing();
              if (syncing === null) break;
              if (this.#queue.length === 0) {
                const arrived = new Promise<void>((resolve) => {
                  this.#arrival = resolve;
                });
                // A failed fsync fails this batch at its own barrier, after the commit.
                await Promise.race([syncing.catch(() => {}), arrived]);
                this.#arrival = null;
              }
              if (this.#queue.length === 0) break;
              const more = this.#queue.splice(0, MAX_BATCH - batch.length);
              batch.push(...more);
              await runMembers(more);
            }
          });
        } catch (commitError) {
          this.#cache.batchEnded();
          // Nothing of the batch is on disk: every member fails.
          for (const pending of batch) pending.reject(commitError);
          continue;
        }
        this.#cache.batchEnded();
        this.#commits += 1;
        const settle = (syncError?: unknown) =>
          batch.forEach((pending, i) => {
            const outcome = outcomes[i];
            if (!outcome) pending.reject(invariantViolation("no outcome"));
            else if (!outcome.ok) pending.reject(outcome.error);
            else if (syncError !== undefined) pending.reject(syncError);
            else pending.resolve(outcome.value);
          });
        const durable = this.#durable();
        if (durable === null) settle();
        else
          durable.then(
            () => settle(),
            (error: unknown) => settle(error ?? new Error("fsync failed")),
          );
      }
    } catch (error) {
      // The connection itself failed (closed under us): nothing queued can commit.
      for (const pending of this.#queue.splice(0)) pending.reject(error);
    } finally {
      this.#draining = false;
    }
  }
}
