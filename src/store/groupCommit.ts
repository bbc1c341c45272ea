// SQLite group commit: concurrent transactions share one real transaction and one fsync, each in its own savepoint.
import { type Kysely, sql } from "kysely";
import type { Database } from "./schema.ts";
import type { Tx } from "./store.ts";

interface Pending {
  work: (tx: Tx) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/** At most this many requests share one commit: bounds the latency one batch adds to its last member. */
export const MAX_BATCH = 64;

/**
 * With `synchronous=FULL` every commit waits for an fsync of the WAL, on the event loop's thread
 * (better-sqlite3 is synchronous). Requests that arrive while a batch runs join the next batch:
 * one BEGIN, a SAVEPOINT per request (a failing request rolls back only itself), one COMMIT and
 * one fsync, and only then are the requests answered, so every answer is already on disk.
 * Work must only touch the database (no network I/O inside a transaction), as everywhere.
 */
export class GroupCommitter {
  readonly #db: Kysely<Database>;
  readonly #queue: Pending[] = [];
  #draining = false;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#draining) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#queue.length > 0) {
        // Let requests that are being parsed right now join this batch.
        await new Promise((resolve) => setImmediate(resolve));
        const batch = this.#queue.splice(0, MAX_BATCH);
        const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
        try {
          await this.#db.transaction().execute(async (trx) => {
            const tx: Tx = { db: trx, dialect: "sqlite" };
            for (const pending of batch) {
              await sql`savepoint request`.execute(trx);
              try {
                const value = await pending.work(tx);
                await sql`release request`.execute(trx);
                outcomes.push({ ok: true, value });
              } catch (error) {
                await sql`rollback to request`.execute(trx);
                await sql`release request`.execute(trx);
                outcomes.push({ ok: false, error });
              }
            }
          });
        } catch (commitError) {
          // Nothing of the batch is on disk: every member fails.
          for (const pending of batch) pending.reject(commitError);
          continue;
        }
        batch.forEach((pending, i) => {
          const outcome = outcomes[i];
          if (outcome?.ok) pending.resolve(outcome.value);
          else pending.reject(outcome ? outcome.error : new Error("invariant violated: no outcome"));
        });
      }
    } finally {
      this.#draining = false;
    }
  }
}
