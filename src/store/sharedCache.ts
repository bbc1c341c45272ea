// PostgreSQL read cache of hot rows (API keys, merchants, currencies, withdrawal methods, invoices), kept fresh across processes by LISTEN/NOTIFY and bounded by a TTL.
import type { Client as PgClient } from "pg";
import type { CachedTable, RowCache } from "./readCache.ts";

/** Entries per table: bounds memory (an invoice entry is ~2 KiB), as on SQLite. */
export const SHARED_CACHE_ENTRIES = 5000;
/**
 * The longest a cached row is served: the bound on how long a change made by another process can go
 * unseen here (a revoked key, a suspended merchant, a paid invoice) should its notice never arrive,
 * e.g. on a connection that stalls without failing. Normally a notice arrives within milliseconds.
 */
export const SHARED_CACHE_TTL_MS = 2000;
/** Pause before the listener reconnects after losing its connection; caching is off meanwhile. */
export const LISTENER_RECONNECT_MS = 1000;
const CHANNEL = "read_cache";

const TABLES: readonly CachedTable[] = [
  "api_keys",
  "merchants",
  "currencies",
  "currency_entries",
  "withdrawal_methods",
  "invoices",
];

/** Statements that write a cached table (Kysely's SQL and the service's own), and which table they touch. */
const WRITES =
  /\b(insert\s+into|update|delete\s+from)\s+"?(api_keys|merchants|currencies|withdrawal_methods|invoices|invoice_payments)"?[\s(]/gi;

/** An update of api_keys that sets its last use (time, and address) and nothing else. */
const LAST_USE_ONLY =
  /^update\s+"?api_keys"?\s+set\s+"?last_used_at"?\s*=\s*\$\d+(\s*,\s*"?last_used_from"?\s*=\s*\$\d+)?\s+where\b/i;

/**
 * The cached tables a statement's SQL changes: a payment changes its invoice, a currency every
 * invoice; a key's last-used time changes nothing cached. A plain insert of a cached table changes nothing cached (absent rows never are), so
 * CreateInvoice leaves the cached invoices alone; an upsert does count.
 */
export function cachedTablesWritten(text: string): CachedTable[] {
  const tables = new Set<CachedTable>();
  for (const match of text.matchAll(WRITES)) {
    const table = match[2]?.toLowerCase();
    // A key's last-used time (touchApiKey) is not part of what is cached for it.
    if (table === "api_keys" && LAST_USE_ONLY.test(text.slice(match.index))) continue;
    // Any write of the catalog, a plain insert too, changes a currency's group of entries.
    if (table === "currencies") tables.add("currency_entries");
    const insert = match[1]?.toLowerCase().startsWith("insert");
    if (insert && table !== "invoice_payments" && !/\bdo\s+update\b/i.test(text)) continue;
    if (table === "invoice_payments") tables.add("invoices");
    else if (table === "currencies") {
      tables.add("currencies");
      tables.add("invoices");
    } else if (table) tables.add(table as CachedTable);
  }
  return [...tables];
}

/**
 * Why it is safe. Another process's change reaches this one as a notice on `read_cache`, sent by
 * the row's trigger (migration 016) and delivered when the change commits: the key is dropped. A
 * change by this process drops the whole table when its statement is sent and again when its
 * connection is released (after commit or rollback), and no fill of that table is kept meanwhile,
 * so this process reads its own writes at once. Every drop ends its table's epoch, and a fill whose
 * read began in an earlier epoch of the table is not kept (the read may predate the change). While the listener is
 * not connected (before it first listens, after a failure until it listens again) nothing is
 * served from or kept in the cache, and everything is dropped when it listens again, since notices
 * were missed. Whatever happens, no entry is served longer than SHARED_CACHE_TTL_MS. Absent rows
 * are never cached. Reads inside a transaction never use it (only the store's own handle has it).
 */
export class SharedReadCache implements RowCache {
  readonly #entries = new Map<CachedTable, Map<string, { value: unknown; expiresAt: number }>>();
  /** Statements of this process writing a table, not yet ended: no fill of that table is kept. */
  readonly #writing = new Map<CachedTable, number>();
  /** Per table: a fill whose read began in an earlier epoch of its table is not kept. */
  readonly #epochs = new Map<CachedTable, number>();
  #listening = false;
  readonly #limit: number;
  readonly #ttlMs: number;

  constructor(limit = SHARED_CACHE_ENTRIES, ttlMs = SHARED_CACHE_TTL_MS) {
    this.#limit = limit;
    this.#ttlMs = ttlMs;
    for (const table of TABLES) this.#entries.set(table, new Map());
  }

  get<T>(table: CachedTable, key: string): T | undefined {
    if (!this.#listening) return undefined;
    const entries = this.#entries.get(table);
    const entry = entries?.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      entries?.delete(key);
      return undefined;
    }
    return entry.value as T;
  }

  ticket(table: CachedTable): number {
    return this.#epochs.get(table) ?? 0;
  }

  set<T>(table: CachedTable, key: string, value: T, ticket: number): T {
    if (!this.#listening || ticket !== this.ticket(table) || (this.#writing.get(table) ?? 0) > 0) return value;
    const entries = this.#entries.get(table);
    if (!entries) return value;
    if (entries.size >= this.#limit) {
      const oldest = entries.keys().next().value;
      if (oldest !== undefined) entries.delete(oldest);
    }
    entries.set(key, { value, expiresAt: Date.now() + this.#ttlMs });
    return value;
  }

  size(table: CachedTable): number {
    return this.#entries.get(table)?.size ?? 0;
  }

  /** A notice from the database: `<table>:<key>` changed and committed. */
  noticed(payload: string): void {
    const colon = payload.indexOf(":");
    const table = payload.slice(0, colon) as CachedTable;
    const entries = this.#entries.get(table);
    if (colon < 0 || !entries) {
      this.#dropAll();
      return;
    }
    entries.delete(payload.slice(colon + 1));
    this.#nextEpoch(table);
    if (table === "currencies") {
      // Any catalog change, a new entry too (migration 036), changes a currency's group of entries.
      for (const also of ["invoices", "currency_entries"] as const) {
        this.#entries.get(also)?.clear();
        this.#nextEpoch(also);
      }
    }
  }

  /** This process sends a statement writing `tables`; `ended` must follow when its connection is released. */
  writing(tables: readonly CachedTable[]): void {
    for (const table of tables) {
      this.#writing.set(table, (this.#writing.get(table) ?? 0) + 1);
      this.#entries.get(table)?.clear();
      this.#nextEpoch(table);
    }
  }

  ended(tables: readonly CachedTable[]): void {
    for (const table of tables) {
      this.#writing.set(table, Math.max(0, (this.#writing.get(table) ?? 0) - 1));
      this.#entries.get(table)?.clear();
      this.#nextEpoch(table);
    }
  }

  /** The listener listens (true) or lost its connection (false): either way, notices may have been missed. */
  setListening(listening: boolean): void {
    this.#listening = listening;
    this.#dropAll();
  }

  #dropAll(): void {
    for (const [table, entries] of this.#entries) {
      entries.clear();
      this.#nextEpoch(table);
    }
  }

  #nextEpoch(table: CachedTable): void {
    this.#epochs.set(table, (this.#epochs.get(table) ?? 0) + 1);
  }
}

/**
 * Keeps one connection listening on `read_cache` for `cache`, reconnecting after a failure. The
 * client has its error listener for its whole life (docs/architecture.md, "When the database
 * fails"): a lost connection turns caching off until a new one listens.
 */
export function listenForChanges(
  databaseUrl: string,
  cache: SharedReadCache,
  pg: { Client: typeof PgClient },
): { close: () => Promise<void> } {
  let closed = false;
  let client: PgClient | null = null;
  let retry: NodeJS.Timeout | null = null;
  const lost = (from: PgClient) => {
    if (client !== from) return;
    client = null;
    cache.setListening(false);
    from.end().catch(() => {});
    if (!closed) {
      retry = setTimeout(connect, LISTENER_RECONNECT_MS);
      retry.unref();
    }
  };
  const connect = () => {
    retry = null;
    if (closed) return;
    const next = new pg.Client({ connectionString: databaseUrl, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
    client = next;
    next.on("error", () => lost(next));
    next.on("end", () => lost(next));
    next.on("notification", (message) => {
      if (message.channel === CHANNEL && client === next) cache.noticed(message.payload ?? "");
    });
    next
      .connect()
      .then(() => next.query(`listen ${CHANNEL}`))
      .then(
        () => {
          if (client === next && !closed) cache.setListening(true);
        },
        () => lost(next),
      );
  };
  connect();
  return {
    close: async () => {
      closed = true;
      if (retry) clearTimeout(retry);
      const current = client;
      client = null;
      cache.setListening(false);
      await current?.end().catch(() => {});
    },
  };
}
