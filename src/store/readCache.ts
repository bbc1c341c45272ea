// SQLite read cache of hot rows (API keys, merchants, currencies, withdrawal methods, invoices), kept exact by TEMP triggers on the writing connection.
import type SQLite from "better-sqlite3";
import { assert } from "../domain/result.ts";

export type CachedTable =
  | "api_keys"
  | "merchants"
  | "currencies"
  /** A currency's catalog entries by ticker (product §23): any change of the catalog drops them all. */
  | "currency_entries"
  | "withdrawal_methods"
  | "invoices";

/**
 * Which writes invalidate which entries: each (table, key column) names the cached table and key
 * a changed row belongs to. A payment belongs to its invoice; a currency change drops every
 * cached invoice too, since a loaded invoice carries its currency's decimals, and every cached
 * group of entries (an insert adds an entry to a group).
 */
const SOURCES: readonly { table: string; column: string; cached: CachedTable; alsoClear?: readonly CachedTable[] }[] = [
  { table: "api_keys", column: "key_hash", cached: "api_keys" },
  { table: "merchants", column: "id", cached: "merchants" },
  { table: "currencies", column: "ticker", cached: "currencies", alsoClear: ["invoices", "currency_entries"] },
  { table: "withdrawal_methods", column: "id", cached: "withdrawal_methods" },
  { table: "invoices", column: "id", cached: "invoices" },
  { table: "invoice_payments", column: "invoice_id", cached: "invoices" },
];

/** What repositories read through: this exact cache on SQLite, the notified one on PostgreSQL (sharedCache.ts). */
export interface RowCache {
  get<T>(table: CachedTable, key: string): T | undefined;
  /** Taken before a read of `table` that may fill the cache, and handed to `set` with what it read. */
  ticket(table: CachedTable): number;
  /** Caches a row read since `ticket` unless it may have changed meanwhile; answers the value. */
  set<T>(table: CachedTable, key: string, value: T, ticket: number): T;
}

/** Entries per table: bounds memory (an invoice entry is ~2 KiB). */
export const READ_CACHE_ENTRIES = 5000;

/**
 * Why it is exact: on SQLite every write of this process goes through one connection (the store
 * itself is query-only), and TEMP triggers on that connection call back into this cache for every
 * row any statement inserts, updates or deletes, whatever code path issued it. A changed key is
 * dropped at once and marked pending until the batch's transaction ends (committed or rolled
 * back); a pending key is never filled, so a read of the old committed row, or of the batch's
 * uncommitted one, cannot be cached across the change. A key the open batch has not touched reads
 * the same on either connection, so it may be filled at any time. SQLite serves one process
 * (docs/architecture.md); another process writing the same file would bypass the triggers.
 * Cached values are frozen: callers share them.
 */
export class ReadCache implements RowCache {
  readonly #entries = new Map<CachedTable, Map<string, unknown>>();
  readonly #pending = new Set<string>();
  /** Tables cleared as a whole by the open batch: none of their keys may be filled until it ends. */
  readonly #pendingTables = new Set<CachedTable>();
  /** Counts ended batches: a fill whose read began in an earlier epoch may have missed a change. */
  #epoch = 0;
  readonly #limit: number;

  constructor(writer: SQLite.Database, limit = READ_CACHE_ENTRIES) {
    this.#limit = limit;
    for (const { cached, alsoClear } of SOURCES) {
      this.#entries.set(cached, new Map());
      for (const table of alsoClear ?? []) this.#entries.set(table, new Map());
    }
    writer.function("read_cache_changed", { deterministic: false, directOnly: true }, (index, key) => {
      const source = SOURCES[Number(index)];
      assert(source, `read cache source ${String(index)}`);
      this.#changed(source.cached, String(key));
      for (const table of source.alsoClear ?? []) {
        this.#entries.get(table)?.clear();
        this.#pendingTables.add(table);
      }
      return null;
    });
    SOURCES.forEach(({ table, column }, index) => {
      for (const [event, rows] of [
        ["insert", ["new"]],
        ["update", ["old", "new"]],
        ["delete", ["old"]],
      ] as const) {
        const calls = rows.map((row) => `select read_cache_changed(${index}, ${row}."${column}");`).join(" ");
        writer.exec(
          `create temp trigger if not exists "read_cache_${table}_${event}" after ${event} on main."${table}" begin ${calls} end`,
        );
      }
    });
  }

  get<T>(table: CachedTable, key: string): T | undefined {
    return this.#entries.get(table)?.get(key) as T | undefined;
  }

  /** Taken before a read that may fill the cache, and handed to `set` with what it read. */
  ticket(): number {
    return this.#epoch;
  }

  /**
   * Caches a row read since `ticket`, unless the open batch changed it or a batch ended since
   * (a change could have come and gone between the read and this call); answers the value.
   */
  set<T>(table: CachedTable, key: string, value: T, ticket: number): T {
    if (ticket !== this.#epoch || this.#pendingTables.has(table) || this.#pending.has(`${table}\u0000${key}`)) {
      return value;
    }
    const entries = this.#entries.get(table);
    if (!entries) return value;
    if (entries.size >= this.#limit) {
      // Oldest first: Map keeps insertion order.
      const oldest = entries.keys().next().value;
      if (oldest !== undefined) entries.delete(oldest);
    }
    entries.set(key, value);
    return value;
  }

  /** How many entries a table holds (tests, metrics). */
  size(table: CachedTable): number {
    return this.#entries.get(table)?.size ?? 0;
  }

  /** The group committer ends every batch (commit or rollback) with this. */
  batchEnded(): void {
    this.#epoch += 1;
    this.#pending.clear();
    this.#pendingTables.clear();
  }

  #changed(table: CachedTable, key: string): void {
    this.#entries.get(table)?.delete(key);
    this.#pending.add(`${table}\u0000${key}`);
  }
}

function deepFreeze<T>(value: T, depth = 3): T {
  if (depth === 0 || value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  for (const child of Object.values(value)) deepFreeze(child, depth - 1);
  return Object.freeze(value);
}

/**
 * Reads through the handle's cache when it has one (SQLite: the store and its transactions;
 * PostgreSQL: the store's own handle, outside transactions): a hit skips the statement, a
 * miss reads and fills. Absent rows are not cached, so unknown keys cannot crowd out known ones.
 */
export async function readThrough<T extends object>(
  tx: { readonly cache?: RowCache | undefined },
  table: CachedTable,
  key: string,
  read: () => Promise<T | null>,
): Promise<T | null> {
  const cache = tx.cache;
  if (!cache) return read();
  const hit = cache.get<T>(table, key);
  if (hit !== undefined) return hit;
  const ticket = cache.ticket(table);
  const value = await read();
  return value === null ? null : cache.set(table, key, deepFreeze(value), ticket);
}
