// Prometheus metrics of one service instance: a registry of its own, shared by HTTP and the workers, read at scrape time.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { CARD_EVENT_IGNORED_REASONS } from "./domain/cardProvider.ts";
import { FLUSH_GAS_ASSUMED, type GasRunway, PAYOUT_GAS_ASSUMED } from "./domain/gasRunway.ts";
import { PAYOUT_STATES, type PayoutState } from "./domain/payout.ts";
import type { ScreeningSources } from "./domain/screening.ts";
import { AWAITING_VELOCITY_CAP } from "./domain/velocityCap.ts";
import { flushOverview } from "./store/flushes.ts";
import { nonceOverview } from "./store/nonceFills.ts";
import { AWAITING_FUNDS } from "./store/payoutTransactions.ts";
import { screeningBacklog } from "./store/screening.ts";
import type { Store } from "./store/store.ts";
import { strayPaymentCounts } from "./store/strayPayments.ts";

/** Every metric name starts with this. */
export const METRICS_PREFIX = "payments_";

/** Bound of one scrape-time collector: a store that does not answer cannot hold a scrape longer. */
export const COLLECTOR_TIMEOUT_MS = 3000;

/** Payout states counted at scrape time: the open ones, whose rows are the work in flight (bounded). */
export const OPEN_PAYOUT_STATES = PAYOUT_STATES.filter(
  (state): state is Exclude<PayoutState, "completed" | "failed"> => state !== "completed" && state !== "failed",
);

/** The label of a request that matched no route: unknown URLs collapse into it (bounded cardinality). */
export const UNMATCHED_ROUTE = "unmatched";

/** Sets gauges at scrape time; a throw leaves them as they were (and, for a store collector, sets store_up to 0). */
export type Collector = () => Promise<void> | void;

/**
 * One instance per service instance (tests run several in one process, so nothing goes to
 * prom-client's global registry). Other modules add their own gauges with `gauge()` and fill them
 * with `onScrape()`, e.g. a chain scanner's lag per network.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<"method" | "route" | "status_code">;
  /** Business operations by outcome (`accepted`, or the problem code that refused them). */
  readonly operations: Counter<"operation" | "outcome">;
  /** Callback attempts by outcome: delivered, retry_scheduled, failed (for good). */
  readonly callbackAttempts: Counter<"outcome">;
  /** Verified card provider webhook events that changed nothing, by why (CARD_EVENT_IGNORED_REASONS). */
  readonly cardEventsIgnored: Counter<"reason">;
  /** Card disputes the provider named for more than their payment: capped at it and flagged (GET /admin/v1/disputes, provider_amount). */
  readonly cardDisputesAbovePayment: Counter;
  readonly storeUp: Gauge;
  readonly #collectors: { name: string; collect: Collector; readsStore: boolean }[] = [];

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.httpDuration = new Histogram({
      name: `${METRICS_PREFIX}http_request_duration_seconds`,
      help: "HTTP request latency by route pattern (not the raw URL), method and status code.",
      labelNames: ["method", "route", "status_code"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.operations = new Counter({
      name: `${METRICS_PREFIX}operations_total`,
      help: "Merchant operations (invoice_create, fee_estimate, withdrawal, refund_crypto, refund_fiat, sandbox_payment, payout_outcome) by outcome: accepted, or the problem code that refused them.",
      labelNames: ["operation", "outcome"],
      registers,
    });
    this.callbackAttempts = new Counter({
      name: `${METRICS_PREFIX}callback_attempts_total`,
      help: "Callback delivery attempts of this process by outcome: delivered, retry_scheduled, failed (no retry left).",
      labelNames: ["outcome"],
      registers,
    });
    this.cardEventsIgnored = new Counter({
      name: `${METRICS_PREFIX}card_provider_events_ignored_total`,
      help: "Verified card provider webhook events answered 200 that changed nothing, by reason: event_type (a type not acted on), no_checkout (names no checkout of ours), payment_not_of_checkout (a PaymentIntent that is not our session's), refund_unknown, refund_not_by_card_provider (names a refund made on another rail), dispute_payment_unknown.",
      labelNames: ["reason"],
      registers,
    });
    this.cardDisputesAbovePayment = new Counter({
      name: `${METRICS_PREFIX}card_disputes_above_payment_total`,
      help: "Card disputes the provider named for more than their payment, capped at the payment and flagged for the operator (GET /admin/v1/disputes: provider_amount).",
      registers,
    });
    // Every reason from the start, at 0: an alert on a rise needs the series before the first one.
    for (const reason of CARD_EVENT_IGNORED_REASONS) this.cardEventsIgnored.inc({ reason }, 0);
    this.storeUp = this.gauge({
      name: "store_up",
      help: "1 when the store answered every query of this scrape, 0 when it did not (the figures read from it are then missing or stale).",
    });
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: METRICS_PREFIX });
  }

  /** A gauge in this instance's registry; `name` gets the common prefix. */
  gauge<L extends string = never>(options: { name: string; help: string; labelNames?: readonly L[] }): Gauge<L> {
    return new Gauge<L>({
      name: `${METRICS_PREFIX}${options.name}`,
      help: options.help,
      labelNames: options.labelNames ?? [],
      registers: [this.registry],
    });
  }

  /** Runs `collect` at every scrape, before the text is rendered; `readsStore` ties its failures to store_up. */
  onScrape(name: string, collect: Collector, options: { readsStore?: boolean } = {}): void {
    this.#collectors.push({ name, collect, readsStore: options.readsStore ?? false });
  }

  /**
   * The Prometheus text. Collectors run one after another, each bounded; one that fails (the store
   * down) leaves its gauges as they were and sets store_up to 0: a scrape never fails for it.
   */
  async scrape(onError: (name: string, error: unknown) => void = () => {}): Promise<string> {
    let up = 1;
    for (const { name, collect, readsStore } of this.#collectors) {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          collect(),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new Error(`collector ${name} took over ${COLLECTOR_TIMEOUT_MS} ms`)),
              COLLECTOR_TIMEOUT_MS,
            );
          }),
        ]);
      } catch (error) {
        if (readsStore) up = 0;
        onError(name, error);
      } finally {
        clearTimeout(timer);
      }
    }
    this.storeUp.set(up);
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/** A gauge per network (label `network`), the shape of every chain figure. */
function networkGauge(metrics: ServiceMetrics, name: string, help: string): Gauge<"network"> {
  return metrics.gauge({ name, help, labelNames: ["network"] });
}

/** Gauges without labels, by key: each its name and its help. */
function plainGauges<K extends string>(
  metrics: ServiceMetrics,
  specs: Record<K, readonly [name: string, help: string]>,
): Record<K, Gauge> {
  const made = {} as Record<K, Gauge>;
  for (const key of Object.keys(specs) as K[]) {
    const [name, help] = specs[key];
    made[key] = metrics.gauge({ name, help });
  }
  return made;
}

/** Seconds since `since` (0 when there is none, or it is unreadable or ahead of this clock). */
function secondsSince(since: string | null): number {
  const at = since === null ? Number.NaN : Date.parse(since);
  return Number.isNaN(at) ? 0 : Math.max(0, (Date.now() - at) / 1000);
}

/**
 * The gauges read from the store: callback queue depth and oldest pending age, open payouts by
 * state, and pool use. Each query counts rows of an indexed column range that is the work in
 * flight (pending callbacks: index (status, next_attempt_at); open payouts: index (state,
 * created_at)), never a whole table.
 */
/**
 * Live networks (product §12), as the scanners recorded them in the store (all processes): blocks
 * between the node's head and the scanner's checkpoint, and whether the node answered last time.
 */
export function registerChainGauges(metrics: ServiceMetrics, store: Store): void {
  const lag = networkGauge(
    metrics,
    "scanner_lag_blocks",
    "Blocks between the node's head and the last block scanned, per network (as of the scanner's last pass).",
  );
  const nodeUp = networkGauge(
    metrics,
    "chain_node_up",
    "1 when the network's node answered the scanner's last pass truly (right chain id, no error), else 0.",
  );
  const stray = networkGauge(
    metrics,
    "chain_stray_payments",
    "Transfers to a deposit address that its invoice does not take (another network or currency), never credited, per network (GET /admin/v1/stray-payments).",
  );
  metrics.onScrape(
    "chain",
    async () => {
      const rows = await store.db
        .selectFrom("networks")
        .select(["name", "head_block", "scanned_block", "node_error"])
        .execute();
      const strays = await strayPaymentCounts(store);
      for (const r of rows) {
        const behind =
          r.head_block === null || r.scanned_block === null ? 0 : Number(r.head_block) - Number(r.scanned_block);
        lag.set({ network: r.name }, Math.max(0, behind));
        nodeUp.set({ network: r.name }, r.node_error === null ? 1 : 0);
        stray.set({ network: r.name }, strays.get(r.name) ?? 0);
      }
    },
    { readsStore: true },
  );
}

/** What a scrape reads of the hot wallet's gas: a runway per configured network whose node answered (src/chain/gasRunway.ts). */
export type GasRunwayReader = () => Promise<{ network: string; runway: GasRunway }[]>;

/**
 * The hot wallet's gas per network (issue 50): its native coin, what transactions in flight were
 * promised, and how many flushes and token payouts the rest pays for. Only networks that are
 * configured and whose node answered this scrape have a series (a node down has its own alert).
 */
export function registerGasGauges(metrics: ServiceMetrics, read: GasRunwayReader): void {
  const balance = networkGauge(
    metrics,
    "hot_wallet_native_balance_wei",
    "The hot wallet's native coin in wei, per network, as the node said at this scrape.",
  );
  const promised = networkGauge(
    metrics,
    "hot_wallet_gas_promised_wei",
    "Native coin (value and gas limit × max fee) promised to hot-wallet transactions in flight, per network.",
  );
  const flushes = networkGauge(
    metrics,
    "hot_wallet_gas_flushes_covered",
    `Flushes the free native coin (balance less promised) pays for at the fee it would sign with now, assuming ${FLUSH_GAS_ASSUMED} gas a flush, per network.`,
  );
  const payouts = networkGauge(
    metrics,
    "hot_wallet_gas_payouts_covered",
    `Token payouts the free native coin pays for at the fee it would sign with now, assuming ${PAYOUT_GAS_ASSUMED} gas a payout, per network.`,
  );
  const gauges = [balance, promised, flushes, payouts];
  metrics.onScrape(
    "gas",
    async () => {
      const runways = await read();
      for (const g of gauges) g.reset();
      for (const { network, runway } of runways) {
        balance.set({ network }, Number(runway.balanceWei));
        promised.set({ network }, Number(runway.promisedWei));
        flushes.set({ network }, Number(runway.flushesCovered));
        payouts.set({ network }, Number(runway.payoutsCovered));
      }
    },
    { readsStore: true },
  );
}

export function registerStoreGauges(metrics: ServiceMetrics, store: Store): void {
  const queue = queueGauges(metrics);
  registerNonceGauges(metrics, store);
  registerFlushGauges(metrics, store);
  metrics.onScrape("store", () => scrapeQueues(store, queue), { readsStore: true });
  registerConnectionGauges(metrics, store);
}

/** The callback queue and the payouts, all processes of this store together. */
function queueGauges(metrics: ServiceMetrics) {
  const { queueDepth, oldestPending } = plainGauges(metrics, {
    queueDepth: [
      "callback_queue_depth",
      "Callback events waiting for delivery (pending), all processes of this store together.",
    ],
    oldestPending: [
      "callback_oldest_pending_age_seconds",
      "Age of the oldest pending callback event (0 when none is pending).",
    ],
  });
  const payouts = metrics.gauge({
    name: "payouts",
    help: "Payouts in each open state (queued, sending, sent, needs_reconciliation); settled payouts are not counted here.",
    labelNames: ["state"],
  });
  const awaitingFunds = networkGauge(
    metrics,
    "payouts_awaiting_funds",
    "Live payouts waiting for the hot wallet to be funded, per network.",
  );
  const awaitingCap = networkGauge(
    metrics,
    "payouts_awaiting_velocity_cap",
    "Live payouts the operator's velocity cap holds back (the network's payouts of the last 24 hours reached it), per network.",
  );
  const inFlight = networkGauge(
    metrics,
    "payout_transactions_in_flight",
    "Live payout transactions signed and not yet final (signed, broadcast, dropped or mined), per network.",
  );
  return { queueDepth, oldestPending, payouts, awaitingFunds, awaitingCap, inFlight };
}

async function scrapeQueues(store: Store, gauges: ReturnType<typeof queueGauges>): Promise<void> {
  const { queueDepth, oldestPending, payouts, awaitingFunds, awaitingCap, inFlight } = gauges;
  const pending = await store.db
    .selectFrom("callback_events")
    .select((eb) => [eb.fn.countAll<number | string>().as("n"), eb.fn.min("created_at").as("oldest")])
    .where("status", "=", "pending")
    .executeTakeFirstOrThrow();
  queueDepth.set(Number(pending.n));
  oldestPending.set(secondsSince(pending.oldest === null ? null : String(pending.oldest)));
  const counted = await store.db
    .selectFrom("payouts")
    .select((eb) => ["state", eb.fn.countAll<number | string>().as("n")])
    .where("state", "in", OPEN_PAYOUT_STATES)
    .groupBy("state")
    .execute();
  for (const state of OPEN_PAYOUT_STATES) {
    payouts.set({ state }, Number(counted.find((row) => row.state === state)?.n ?? 0));
  }
  // Only queued payouts can await funds, and only open transactions are in flight: both small ranges.
  const [waiting, flying] = await Promise.all([
    store.db
      .selectFrom("payouts")
      .innerJoin("currencies", "currencies.ticker", "payouts.currency")
      .select((eb) => ["currencies.network", "payouts.processor_status", eb.fn.countAll<number | string>().as("n")])
      .where("payouts.state", "=", "queued")
      .where("payouts.processor_status", "in", [AWAITING_FUNDS, AWAITING_VELOCITY_CAP])
      .groupBy(["currencies.network", "payouts.processor_status"])
      .execute(),
    store.db
      .selectFrom("hot_transactions")
      .select((eb) => ["network", eb.fn.countAll<number | string>().as("n")])
      .where("purpose", "=", "payout")
      .where("state", "in", ["signed", "broadcast", "dropped", "mined"])
      .groupBy("network")
      .execute(),
  ]);
  awaitingFunds.reset();
  awaitingCap.reset();
  for (const row of waiting) {
    const gauge = row.processor_status === AWAITING_FUNDS ? awaitingFunds : awaitingCap;
    gauge.set({ network: row.network }, Number(row.n));
  }
  inFlight.reset();
  for (const row of flying) inFlight.set({ network: row.network }, Number(row.n));
}

/** The hot wallet's nonces on each network: unmined, the oldest unmined, gaps. */
function registerNonceGauges(metrics: ServiceMetrics, store: Store): void {
  const unmined = networkGauge(
    metrics,
    "hot_wallet_unmined_nonces",
    "Hot-wallet nonces with a stored transaction not yet mined (payouts, gas fundings, nonce fills), per network.",
  );
  const oldestUnmined = networkGauge(
    metrics,
    "hot_wallet_oldest_unmined_age_seconds",
    "Age of the oldest hot-wallet transaction not yet mined (0 when none), per network.",
  );
  const nonceGaps = networkGauge(
    metrics,
    "hot_wallet_nonce_gaps",
    "Hot-wallet nonces below the next one that no stored transaction uses, as last checked, per network.",
  );
  metrics.onScrape(
    "nonces",
    async () => {
      const networks = await store.db.selectFrom("networks").select("name").execute();
      unmined.reset();
      oldestUnmined.reset();
      nonceGaps.reset();
      for (const { name } of networks) {
        const overview = await nonceOverview(store, name);
        unmined.set({ network: name }, overview.unminedNonces);
        oldestUnmined.set({ network: name }, secondsSince(overview.oldestUnminedSince));
        nonceGaps.set({ network: name }, overview.nonceGaps);
      }
    },
    { readsStore: true },
  );
}

/** Forwarder deposits not yet flushed to the hot wallet on each network, and the oldest one's age (product §24). */
function registerFlushGauges(metrics: ServiceMetrics, store: Store): void {
  const waiting = metrics.gauge({
    name: "flush_waiting_deposits",
    help: "Confirmed deposits at forwarder addresses waiting for a flush or in one not yet mined, per network.",
    labelNames: ["network"],
  });
  const oldest = metrics.gauge({
    name: "flush_oldest_waiting_age_seconds",
    help: "Age of the oldest deposit waiting for a flush (0 when none), per network.",
    labelNames: ["network"],
  });
  const failed = metrics.gauge({
    name: "flush_failed_deposits",
    help: "Deposits whose flush the token refused past the retry bound: the operator's to look at, per network.",
    labelNames: ["network"],
  });
  metrics.onScrape(
    "flushes",
    async () => {
      const networks = await store.db.selectFrom("networks").select("name").execute();
      waiting.reset();
      oldest.reset();
      failed.reset();
      for (const { name } of networks) {
        const overview = await flushOverview(store, name);
        waiting.set({ network: name }, overview.waitingDeposits);
        const since = overview.oldestWaitingSince === null ? null : Date.parse(overview.oldestWaitingSince);
        oldest.set({ network: name }, since === null ? 0 : Math.max(0, (Date.now() - since) / 1000));
        failed.set({ network: name }, overview.failedDeposits);
      }
    },
    { readsStore: true },
  );
}

/** This process's connections: the PostgreSQL pool, or SQLite's commit queue. */
function registerConnectionGauges(metrics: ServiceMetrics, store: Store): void {
  const poolUse = store.poolUse;
  if (poolUse) {
    const pool = metrics.gauge({
      name: "db_pool_connections",
      help: "PostgreSQL pool of this process: total and idle connections, and requests waiting for one.",
      labelNames: ["state"],
    });
    metrics.onScrape("pool", () => {
      const use = poolUse();
      pool.set({ state: "total" }, use.total);
      pool.set({ state: "idle" }, use.idle);
      pool.set({ state: "waiting" }, use.waiting);
    });
  }
  const commitQueue = store.commitQueueLength;
  if (commitQueue) {
    const queued = metrics.gauge({
      name: "sqlite_commit_queue_length",
      help: "SQLite: transactions waiting for the next group commit of this process (the single writer's queue).",
    });
    metrics.onScrape("commit_queue", () => queued.set(commitQueue()));
  }
}

/**
 * Screening (product §21): the list's size and age, the provider's availability, the payments
 * waiting. A part that is not configured has no gauge at all: an unset gauge would read 0, and
 * "provider up == 0" would page every operator who runs without a provider.
 */
export function registerScreeningGauges(metrics: ServiceMetrics, store: Store, sources: ScreeningSources): void {
  const { waiting, configured } = plainGauges(metrics, {
    waiting: [
      "screening_waiting_payments",
      "Incoming payments waiting for their sender's screening, all processes of this store together.",
    ],
    configured: [
      "screening_sources",
      "Screening sources configured (the list file, the provider): 0 means payments are not screened.",
    ],
  });
  configured.set((sources.list ? 1 : 0) + (sources.provider ? 1 : 0));
  if (sources.list) registerListGauges(metrics, sources.list);
  const provider = sources.provider;
  if (provider) {
    const { providerUp } = plainGauges(metrics, {
      providerUp: [
        "screening_provider_up",
        "1 when the screening provider's latest call was answered, 0 when it was not.",
      ],
    });
    metrics.onScrape("screening_provider", () => providerUp.set(provider.status().available ? 1 : 0));
  }
  metrics.onScrape(
    "screening_backlog",
    async () => {
      waiting.set((await screeningBacklog(store)).waiting);
    },
    { readsStore: true },
  );
}

function registerListGauges(metrics: ServiceMetrics, list: NonNullable<ScreeningSources["list"]>): void {
  const { entries, age, listError } = plainGauges(metrics, {
    entries: ["screening_list_entries", "Addresses in the screening list in use (SCREENING_LIST)."],
    age: ["screening_list_age_seconds", "Seconds since the list file in use was modified."],
    listError: [
      "screening_list_rejected",
      "1 when the list file's latest content was refused (the last good list stays in use), else 0.",
    ],
  });
  metrics.onScrape("screening_list", async () => {
    // A scrape rereads a changed file too: the gauges say what the next screening will use.
    await list.refresh();
    const status = list.status();
    entries.set(status.entries);
    if (status.modifiedAt !== null) age.set(secondsSince(status.modifiedAt));
    listError.set(status.lastError === null ? 0 : 1);
  });
}
