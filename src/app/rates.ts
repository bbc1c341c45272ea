// Rate lookup for quotes (product §22): each currency's USD rate from its source, feed reads shared between requests for a bounded time, and their metrics.
import { Counter } from "prom-client";
import type { Currency } from "../domain/currencies.ts";
import {
  type ChainlinkRateSource,
  type FeedReadError,
  type FeedReader,
  type FeedRound,
  type QuoteRate,
  type RateRefusal,
  rateOfRound,
  roundAgeSeconds,
} from "../domain/rates.ts";
import { err, ok, type Result } from "../domain/result.ts";
import { METRICS_PREFIX, type ServiceMetrics } from "../metrics.ts";
import { findNetwork } from "../store/networks.ts";
import { recordRateReading, sourceKey } from "../store/rateReadings.ts";
import type { SecretBox } from "../store/secrets.ts";
import type { Store } from "../store/store.ts";

export type FeedReaderFactory = (rpcUrl: string, timeoutMs: number) => FeedReader;

/** Feeds remembered at once: far above any catalog; the oldest reading goes first beyond it. */
export const MAX_CACHED_FEEDS = 256;
/** Retry-After of a stale or refused feed: feeds heartbeat in minutes, a retry sooner is unlikely to help. */
export const STALE_RETRY_AFTER_SECONDS = 60;
/** Retry-After of a node that failed or was slow. */
export const READ_RETRY_AFTER_SECONDS = 10;
/** A reading is written to the store again after this long even when the round is the same (its read time). */
const READING_REWRITE_MS = 60_000;

export interface RateUnavailable {
  readonly ticker: string;
  readonly reason: RateRefusal | FeedReadError;
  readonly detail: string;
  readonly retryAfterSeconds: number;
}

/** A lookup's answer: the value, or why the rate is unavailable (a value, never thrown). */
export type RateAnswer<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly unavailable: RateUnavailable };

interface CachedRound {
  readonly round: FeedRound;
  readonly readAtMs: number;
}

interface FeedState {
  readonly ticker: string;
  readonly network: string;
  readonly feed: string;
  lastRound: FeedRound | null;
}

export interface RateServiceOptions {
  readonly cacheMs: number;
  readonly timeoutMs: number;
  readonly readerFactory?: FeedReaderFactory;
  /**
   * Loads the feed reader at the first feed read, when `readerFactory` is not given: the composition
   * root passes the Chainlink adapter's (src/rates), which a use case must not import itself.
   */
  readonly loadReaderFactory: () => Promise<FeedReaderFactory>;
}

/** The process's rate lookups: one per service instance, shared by every request. */
export class RateService {
  readonly #store: Store;
  readonly #box: SecretBox;
  readonly #options: RateServiceOptions;
  readonly #cache = new Map<string, CachedRound>();
  readonly #inflight = new Map<string, Promise<Result<FeedRound, FeedReadError>>>();
  readonly #readers = new Map<string, { rpcUrl: string; reader: FeedReader }>();
  /** Per currency with a feed: for the age gauge (bounded by the catalog). */
  readonly #feeds = new Map<string, FeedState>();
  readonly #written = new Map<string, { source: string; updatedAt: bigint; answer: bigint; atMs: number }>();
  readonly #failures: Counter<"currency" | "network" | "feed" | "reason">;

  constructor(store: Store, box: SecretBox, metrics: ServiceMetrics, options: RateServiceOptions) {
    this.#store = store;
    this.#box = box;
    this.#options = options;
    this.#failures = new Counter({
      name: `${METRICS_PREFIX}rate_feed_read_failures_total`,
      help: "Rate feed reads of this process that gave no usable rate, by currency, network, feed and reason (node_timeout, node_unreachable, node_error, feed_reverted, network_unknown, rate_stale, rate_not_positive, rate_decimals_invalid).",
      labelNames: ["currency", "network", "feed", "reason"],
      registers: [metrics.registry],
    });
    const age = metrics.gauge({
      name: "rate_feed_age_seconds",
      help: "Seconds since the last round (updatedAt) of each currency's rate feed this process read.",
      labelNames: ["currency", "network", "feed"] as const,
    });
    metrics.onScrape("rate_feeds", () => {
      age.reset();
      const now = Date.now() / 1000;
      for (const state of this.#feeds.values()) {
        if (state.lastRound === null) continue;
        age.set(
          { currency: state.ticker, network: state.network, feed: state.feed },
          roundAgeSeconds(state.lastRound, now),
        );
      }
    });
  }

  /** The rate a quote takes for `currency` now, or why there is none. */
  async rateFor(currency: Currency, nowMs: number = Date.now()): Promise<RateAnswer<QuoteRate>> {
    const source = currency.rateSource;
    if (source === undefined || source.kind === "static") {
      return {
        ok: true,
        value: { ticker: currency.ticker, rateUsd: currency.rateUsd, source: "static", updatedAt: null },
      };
    }
    const labels = { currency: currency.ticker, network: source.network, feed: source.feed };
    const state = this.#feedState(currency.ticker, source);
    const read = await this.#round(source, nowMs);
    if (!read.ok) {
      this.#failures.inc({ ...labels, reason: read.error });
      const unavailable: RateUnavailable = {
        ticker: currency.ticker,
        reason: read.error,
        detail: read.detail ?? read.error,
        retryAfterSeconds: READ_RETRY_AFTER_SECONDS,
      };
      return { ok: false, unavailable };
    }
    state.lastRound = read.value;
    const rate = rateOfRound(read.value, nowMs / 1000, source.maxAgeSeconds);
    if (!rate.ok) {
      this.#failures.inc({ ...labels, reason: rate.error });
      const unavailable: RateUnavailable = {
        ticker: currency.ticker,
        reason: rate.error,
        detail: rate.detail ?? rate.error,
        retryAfterSeconds: STALE_RETRY_AFTER_SECONDS,
      };
      return { ok: false, unavailable };
    }
    const updatedAt = new Date(Number(read.value.updatedAt) * 1000).toISOString();
    await this.#remember(currency.ticker, source, read.value, rate.value, updatedAt, nowMs);
    return { ok: true, value: { ticker: currency.ticker, rateUsd: rate.value, source: "chainlink", updatedAt } };
  }

  /** The rates of an invoice's currencies (each once), or the first that is unavailable. */
  async quoteRates(currencies: readonly Currency[]): Promise<RateAnswer<QuoteRate[]>> {
    const seen = new Set<string>();
    const distinct = currencies.filter((c) => !seen.has(c.ticker) && seen.add(c.ticker));
    const rates = await Promise.all(distinct.map((c) => this.rateFor(c)));
    const quoted: QuoteRate[] = [];
    for (const rate of rates) {
      if (!rate.ok) return rate;
      quoted.push(rate.value);
    }
    return { ok: true, value: quoted };
  }

  #feedState(ticker: string, source: ChainlinkRateSource): FeedState {
    const known = this.#feeds.get(ticker);
    if (known && known.network === source.network && known.feed === source.feed) return known;
    const state: FeedState = { ticker, network: source.network, feed: source.feed, lastRound: null };
    this.#feeds.set(ticker, state);
    return state;
  }

  /** A round of the feed: the cached one while younger than cacheMs, else one read shared by concurrent callers. */
  async #round(source: ChainlinkRateSource, nowMs: number): Promise<Result<FeedRound, FeedReadError>> {
    const key = sourceKey(source);
    const cached = this.#cache.get(key);
    if (cached && nowMs - cached.readAtMs < this.#options.cacheMs) return ok(cached.round);
    let pending = this.#inflight.get(key);
    if (pending === undefined) {
      pending = this.#read(source).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    const read = await pending;
    if (read.ok) {
      this.#cache.delete(key);
      this.#cache.set(key, { round: read.value, readAtMs: Date.now() });
      // Maps iterate in insertion order: the first key is the oldest reading.
      if (this.#cache.size > MAX_CACHED_FEEDS) this.#cache.delete(this.#cache.keys().next().value as string);
    }
    return read;
  }

  async #read(source: ChainlinkRateSource): Promise<Result<FeedRound, FeedReadError>> {
    const network = await findNetwork(this.#store, this.#box, source.network);
    if (!network) return err("network_unknown", `the network ${source.network} is not configured`);
    let entry = this.#readers.get(source.network);
    if (!entry || entry.rpcUrl !== network.rpcUrl) {
      // viem loads at the first feed read: a service with static rates only never pays for it.
      const factory = this.#options.readerFactory ?? (await this.#options.loadReaderFactory());
      entry = { rpcUrl: network.rpcUrl, reader: factory(network.rpcUrl, this.#options.timeoutMs) };
      this.#readers.set(source.network, entry);
    }
    return entry.reader.read(source.feed);
  }

  /** Keeps the reading in the store (for the operator's list and payment values), when it is new or a minute old. */
  async #remember(
    ticker: string,
    source: ChainlinkRateSource,
    round: FeedRound,
    rateUsd: QuoteRate["rateUsd"],
    feedUpdatedAt: string,
    nowMs: number,
  ): Promise<void> {
    const last = this.#written.get(ticker);
    const key = sourceKey(source);
    if (
      last &&
      last.source === key &&
      last.updatedAt === round.updatedAt &&
      last.answer === round.answer &&
      nowMs - last.atMs < READING_REWRITE_MS
    ) {
      return;
    }
    const readAt = new Date(nowMs).toISOString();
    await this.#store.transaction((tx) =>
      recordRateReading(tx, { ticker, source: key, rateUsd, feedUpdatedAt, readAt }),
    );
    this.#written.set(ticker, { source: key, updatedAt: round.updatedAt, answer: round.answer, atMs: nowMs });
  }
}
