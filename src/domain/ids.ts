// Identifiers of the rows this service creates: UUIDv7 (RFC 9562), time-ordered so that B-tree inserts land on an index's last page.
import { randomUUID } from "node:crypto";

let prefixMs = -1;
let prefix = "";

/**
 * 48 bits of Unix milliseconds, the version, then the 74 random bits of a fresh v4 UUID (node's
 * CSPRNG). Random v4 keys put every insert on a different page of each index, so a group commit
 * wrote a page per row and index; time-ordered keys share the last page (SQLite's cost per invoice
 * halved in docs/performance.md). There is deliberately no counter within a millisecond (RFC 9562
 * method 1 would make neighbours guessable): an invoice id is the capability of its payment page.
 * Hand-written because the `uuid` package's v7 keeps such a counter and costs ~4x this.
 */
export function newRowId(): string {
  const random = randomUUID();
  const now = Date.now();
  if (now !== prefixMs) {
    const hex = now.toString(16).padStart(12, "0");
    prefix = `${hex.slice(0, 8)}-${hex.slice(8)}-7`;
    prefixMs = now;
  }
  // A v4 is xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx: keep everything after its version digit.
  return prefix + random.slice(15);
}

/** The millisecond a row id was made in (tests, diagnostics). */
export function rowIdTime(id: string): number {
  return Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}
