// Tells a database that is unavailable (lost connection, refused connection, busy or failing file) from a query's own error.

/** Thrown by the store when it cannot get a connection at all; its cause is the driver's error. */
export class StoreUnavailableError extends Error {
  readonly code = "store_unavailable";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
  }
}

/**
 * PostgreSQL SQLSTATEs that mean the server or the connection went away, not that the query was
 * wrong: class 08 (connection exception), 57P01–57P05 (terminated by an administrator, a crash, a
 * server starting or shutting down, idle timeout), 53300 (too many connections). Any failure to
 * connect (including a database that refuses connections, 55000) is wrapped at connect time.
 */
const POSTGRES_UNAVAILABLE = /^(08...|57P0[1-5]|53300)$/;

/** Socket errors of a cut or refused TCP link. */
const SOCKET_UNAVAILABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * SQLite primary codes (better-sqlite3's `code` names the extended one, e.g. SQLITE_IOERR_WRITE) for
 * a file that is locked by another process beyond the busy timeout, cannot be read or written,
 * or is full: the request failed as a whole and may succeed later.
 */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|IOERR|FULL|CANTOPEN|PROTOCOL)(_|$)/;

/** Messages of node-postgres for a client whose connection died (it sets no code on them). */
const POSTGRES_LOST_MESSAGES = [
  "Connection terminated",
  "Client has encountered a connection error and is not queryable",
  "Client was closed and is not queryable",
  "timeout exceeded when trying to connect",
  "Connection terminated due to connection timeout",
];

/** True when `error` (or an error it was caused by) says the database is unavailable rather than the request wrong. */
export function isStoreUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    if (current instanceof StoreUnavailableError) return true;
    if (typeof current !== "object") return false;
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === "string") {
      if (POSTGRES_UNAVAILABLE.test(code) || SOCKET_UNAVAILABLE.has(code) || SQLITE_UNAVAILABLE.test(code)) return true;
    }
    if (typeof message === "string" && POSTGRES_LOST_MESSAGES.some((m) => message.startsWith(m))) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
