// The last rate each currency's feed gave (product §22): written after a read, read by the operator's currency list and by payment valuation.
import type { Currency } from "../domain/currencies.ts";
import { type Decimal, formatDecimal, parseDecimal } from "../domain/money.ts";
import type { RateSource } from "../domain/rates.ts";
import { assert } from "../domain/result.ts";
import type { Tx } from "./store.ts";

export interface RateReading {
  readonly ticker: string;
  /** Which source gave it (`chainlink:<network>:<feed>`): a reading of a replaced source is not used. */
  readonly source: string;
  readonly rateUsd: Decimal;
  /** The feed round's time (ISO-8601). */
  readonly feedUpdatedAt: string;
  readonly readAt: string;
}

/** The key a reading is kept under for a source. */
export function sourceKey(source: RateSource): string {
  return source.kind === "static" ? "static" : `chainlink:${source.network}:${source.feed.toLowerCase()}`;
}

export async function recordRateReading(tx: Tx, reading: RateReading): Promise<void> {
  const values = {
    ticker: reading.ticker,
    source: reading.source,
    rate_usd: formatDecimal(reading.rateUsd),
    feed_updated_at: reading.feedUpdatedAt,
    read_at: reading.readAt,
  };
  await tx.db
    .insertInto("rate_readings")
    .values(values)
    .onConflict((oc) =>
      oc.column("ticker").doUpdateSet({
        source: values.source,
        rate_usd: values.rate_usd,
        feed_updated_at: values.feed_updated_at,
        read_at: values.read_at,
      }),
    )
    .execute();
}

function fromRow(r: { ticker: string; source: string; rate_usd: string; feed_updated_at: string; read_at: string }) {
  const rateUsd = parseDecimal(r.rate_usd);
  assert(rateUsd !== null, `rate reading ${r.rate_usd}`);
  return { ticker: r.ticker, source: r.source, rateUsd, feedUpdatedAt: r.feed_updated_at, readAt: r.read_at };
}

/** Every currency's last reading, by ticker (bounded by the catalog). */
export async function listRateReadings(tx: Tx): Promise<Map<string, RateReading>> {
  const rows = await tx.db.selectFrom("rate_readings").selectAll().execute();
  return new Map(rows.map((r) => [r.ticker, fromRow(r)]));
}

/**
 * The rate a currency's source gives now, from what is stored: the operator's rate for a static
 * source, the last reading of a feed while it is younger than the feed's maxAgeSeconds; else null.
 * No node is asked (this runs inside transactions).
 */
export async function liveRate(tx: Tx, currency: Currency, nowMs: number): Promise<Decimal | null> {
  const source = currency.rateSource;
  if (source === undefined || source.kind === "static") return currency.rateUsd;
  const row = await tx.db
    .selectFrom("rate_readings")
    .selectAll()
    .where("ticker", "=", currency.ticker)
    .executeTakeFirst();
  if (!row || row.source !== sourceKey(source)) return null;
  const reading = fromRow(row);
  const ageMs = nowMs - Date.parse(reading.feedUpdatedAt);
  return ageMs <= source.maxAgeSeconds * 1000 ? reading.rateUsd : null;
}
