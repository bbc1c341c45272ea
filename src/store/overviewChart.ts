// The dashboard overview's picture (product §14): a merchant's invoices of the last days grouped per UTC day, currency and status in SQL, summed exactly on both engines.
import { sql } from "kysely";
import type { Tx } from "./store.ts";

/** One group: invoices created on `day` (UTC, YYYY-MM-DD) in `currency` with `status`. */
export interface InvoiceDayGroup {
  day: string;
  currency: string;
  status: string;
  invoices: number;
  /** The sum of their `final_amount`, in minor units of `currency`. */
  finalAmountMinor: bigint;
}

/**
 * Amounts are decimal text. SQLite adds text as floating point and PostgreSQL would need numeric,
 * so each amount is cut into the digits above and below 10^9, each part summed as a 64-bit
 * integer (exact in both engines: a part below 10^9 summed over billions of rows still fits, and
 * an amount's upper part is its value over 10^9), and the two sums are put together in bigint.
 */
const UPPER = sql<string>`CASE WHEN length(final_amount) > 9 THEN CAST(substr(final_amount, 1, length(final_amount) - 9) AS BIGINT) ELSE 0 END`;
const LOWER = sql<string>`CASE WHEN length(final_amount) > 9 THEN CAST(substr(final_amount, length(final_amount) - 8) AS BIGINT) ELSE CAST(final_amount AS BIGINT) END`;
const PART = 1_000_000_000n;

/**
 * Groups of the merchant's invoices created at or after `sinceIso`: one range of the index
 * (merchant_id, created_at, id), at most days × currencies × statuses rows back.
 */
export async function invoiceDayGroups(tx: Tx, merchantId: string, sinceIso: string): Promise<InvoiceDayGroup[]> {
  const day = sql<string>`substr(created_at, 1, 10)`;
  const rows = await tx.db
    .selectFrom("invoices")
    .select([
      day.as("day"),
      "currency",
      "status",
      sql<string>`CAST(count(*) AS TEXT)`.as("invoices"),
      sql<string>`CAST(sum(${UPPER}) AS TEXT)`.as("upper"),
      sql<string>`CAST(sum(${LOWER}) AS TEXT)`.as("lower"),
    ])
    .where("merchant_id", "=", merchantId)
    .where("created_at", ">=", sinceIso)
    .groupBy([day, "currency", "status"])
    .execute();
  return rows.map((r) => ({
    day: r.day,
    currency: r.currency,
    status: r.status,
    invoices: Number(r.invoices),
    finalAmountMinor: BigInt(r.upper) * PART + BigInt(r.lower),
  }));
}
