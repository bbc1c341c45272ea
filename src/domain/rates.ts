// Rates (product §22): where a currency's USD rate comes from, when a feed's answer may be used, the quote an invoice fixes, and USD values; pure rules, no I/O.
import { type Decimal, divideHalfUp, formatAmount, formatDecimal, parseDecimal } from "./money.ts";
import { assert, err, ok, type Result } from "./result.ts";

/** Where a catalog currency's rate comes from. A currency without one is `static`. */
export type RateSource = StaticRateSource | ChainlinkRateSource;

export interface StaticRateSource {
  readonly kind: "static";
}

/** A Chainlink AggregatorV3Interface feed (answer in USD per unit) on a configured network. */
export interface ChainlinkRateSource {
  readonly kind: "chainlink";
  readonly network: string;
  /** The feed's contract address (EIP-55). */
  readonly feed: string;
  /** A round older than this is stale: no quote is made from it. */
  readonly maxAgeSeconds: number;
}

export const STATIC_SOURCE: StaticRateSource = { kind: "static" };

/** Bounds of maxAgeSeconds: a minute to a week (feeds heartbeat from minutes to a day). */
export const MAX_AGE_SECONDS_MIN = 1;
export const MAX_AGE_SECONDS_MAX = 604_800;

/** One round of a feed, as `decimals()` and `latestRoundData()` answer it. */
export interface FeedRound {
  readonly answer: bigint;
  readonly decimals: number;
  /** Seconds since the epoch. */
  readonly updatedAt: bigint;
}

/** Why a feed could not be read; the reader never throws. */
export type FeedReadError = "node_timeout" | "node_unreachable" | "node_error" | "feed_reverted" | "network_unknown";

/** What reads one feed through a node (an adapter: src/rates/chainlink.ts). */
export interface FeedReader {
  read(feed: string): Promise<Result<FeedRound, FeedReadError>>;
}

export type RateRefusal = "rate_not_positive" | "rate_stale" | "rate_decimals_invalid";

/** Feeds answer at most this many fraction digits (Chainlink's are 8 or 18). */
export const MAX_FEED_DECIMALS = 36;

/**
 * The rate of a round, if it may be used at `nowSeconds`: its answer exactly, with the feed's own
 * precision (answer / 10^decimals), refused when not positive or older than `maxAgeSeconds`.
 * A round stamped in the future (clocks differ) counts as fresh.
 */
export function rateOfRound(round: FeedRound, nowSeconds: number, maxAgeSeconds: number): Result<Decimal, RateRefusal> {
  if (!Number.isInteger(round.decimals) || round.decimals < 0 || round.decimals > MAX_FEED_DECIMALS) {
    return err("rate_decimals_invalid", `the feed has ${round.decimals} decimals`);
  }
  if (round.answer <= 0n) return err("rate_not_positive", `the feed answered ${round.answer}`);
  const age = BigInt(Math.floor(nowSeconds)) - round.updatedAt;
  if (age > BigInt(maxAgeSeconds)) {
    return err("rate_stale", `the feed's last update is ${age} s old (at most ${maxAgeSeconds} s)`);
  }
  return ok({ units: round.answer, scale: round.decimals });
}

/** Seconds since a round's update (never negative), for metrics. */
export function roundAgeSeconds(round: Pick<FeedRound, "updatedAt">, nowSeconds: number): number {
  const age = Math.floor(nowSeconds) - Number(round.updatedAt);
  return age > 0 ? age : 0;
}

/** One rate an invoice's quote fixed: the currency, its USD rate, and where it came from. */
export interface QuoteRate {
  readonly ticker: string;
  readonly rateUsd: Decimal;
  readonly source: RateSource["kind"];
  /** A feed's round time (ISO-8601); null for a static rate. */
  readonly updatedAt: string | null;
}

/** The rates an invoice was created with: its currency's, and its settlement currency's when that differs. */
export type QuoteRates = readonly QuoteRate[];

interface StoredQuoteRate {
  ticker: string;
  rateUsd: string;
  source: RateSource["kind"];
  updatedAt: string | null;
}

export function serializeQuoteRates(rates: QuoteRates): string {
  const stored: StoredQuoteRate[] = rates.map((r) => ({
    ticker: r.ticker,
    rateUsd: formatDecimal(r.rateUsd),
    source: r.source,
    updatedAt: r.updatedAt,
  }));
  return JSON.stringify(stored);
}

/** Reads what serializeQuoteRates wrote; throws on anything else (it is the service's own column). */
export function parseQuoteRates(text: string): QuoteRates {
  const stored = JSON.parse(text) as StoredQuoteRate[];
  assert(Array.isArray(stored), "quote_rates holds a list");
  return stored.map((s) => {
    const rateUsd = parseDecimal(s.rateUsd);
    assert(rateUsd !== null && rateUsd.units > 0n, `quote rate ${s.rateUsd}`);
    return { ticker: s.ticker, rateUsd, source: s.source, updatedAt: s.updatedAt };
  });
}

/**
 * The currency as an invoice's conversions see it: with the rate its quote fixed. An invoice made
 * before quotes were fixed (no rates) keeps the catalog's rate, as it always did.
 */
export function atQuotedRate<C extends { readonly ticker: string; readonly rateUsd: Decimal }>(
  currency: C,
  rates: QuoteRates | null,
): C {
  const fixed = rates?.find((r) => r.ticker === currency.ticker);
  return fixed === undefined ? currency : { ...currency, rateUsd: fixed.rateUsd };
}

/** USD values are kept in cents. */
export const USD_DECIMALS = 2;

/** The USD value of an amount at a rate, in cents, rounded half up once (product §3). */
export function usdValueMinor(amountMinor: bigint, decimals: number, rateUsd: Decimal): bigint {
  return divideHalfUp(
    amountMinor * rateUsd.units * 10n ** BigInt(USD_DECIMALS),
    10n ** BigInt(decimals + rateUsd.scale),
  );
}

export function formatUsd(cents: bigint): string {
  return formatAmount(cents, USD_DECIMALS);
}

/** A payment's value when it was confirmed: at the invoice's fixed rate, and at the live rate when one was known. */
export interface PaymentValue {
  /** Cents at the invoice's fixed rate. */
  readonly valueUsdMinor: bigint;
  readonly liveRateUsd: Decimal | null;
  readonly liveValueUsdMinor: bigint | null;
}

export function paymentValue(
  amountMinor: bigint,
  decimals: number,
  fixedRate: Decimal,
  liveRate: Decimal | null,
): PaymentValue {
  return {
    valueUsdMinor: usdValueMinor(amountMinor, decimals, fixedRate),
    liveRateUsd: liveRate,
    liveValueUsdMinor: liveRate === null ? null : usdValueMinor(amountMinor, decimals, liveRate),
  };
}

/** The stored form of a rate source (null: static, so old rows and new static ones read alike). */
export function serializeRateSource(source: RateSource): string | null {
  return source.kind === "static" ? null : JSON.stringify(source);
}

export function parseRateSource(text: string | null | undefined): RateSource {
  if (text === null || text === undefined) return STATIC_SOURCE;
  const parsed = JSON.parse(text) as ChainlinkRateSource;
  assert(parsed.kind === "chainlink", `rate source ${text}`);
  return {
    kind: "chainlink",
    network: parsed.network,
    feed: parsed.feed,
    maxAgeSeconds: parsed.maxAgeSeconds,
  };
}
