// Paying out on a hand-over rail (sandbox, operator, card provider): one bounded batch claims the rail's queued payouts, screens each crypto destination and hands each to the rail's processor, asks it for outcomes, and sets unclear hand-overs aside for reconciliation.
import type { FastifyBaseLogger } from "fastify";
import { merchantAccount } from "../domain/ledger.ts";
import type {
  CheckAnswer,
  Payout,
  PayoutProcessor,
  PayoutRail,
  PayoutRailPolicy,
  SendAnswer,
} from "../domain/payout.ts";
import { looksLikeAddress } from "../domain/screening.ts";
import {
  assignPayoutRails,
  claimPayouts,
  claimScreenedPayouts,
  duePayoutChecks,
  expiredClaims,
  expireLeases,
  findPayout,
  markNeedsReconciliation,
  queuedPayouts,
  recordSent,
  renewBatchLease,
  reschedulePayoutCheck,
  type SettlementReport,
  settlePayout,
} from "../store/payouts.ts";
import type { Store, Tx } from "../store/store.ts";

export interface PayoutBatchOptions {
  processor: PayoutProcessor;
  /** The rail whose payouts the batch claims; absent: every queued payout (a test driving one processor). */
  rail?: PayoutRail;
  /** When set, queued payouts without a rail (accepted before rails were recorded) first get theirs. */
  railPolicy?: PayoutRailPolicy;
  now: Date;
  /** How long a claim lasts; a hand-over not reported by then goes to reconciliation. */
  leaseMs: number;
  /** Bound on the payouts each step of one batch touches. */
  batchSize: number;
  /** Base of the links in the callbacks that a settlement records (a refund moves its invoice). */
  publicBaseUrl: string;
  log: FastifyBaseLogger;
  /**
   * Screens a payout's crypto destination just before its hand-over (product §21), as the EVM rail
   * does before signing; absent: not screened (a test driving one processor).
   */
  screenDestination?: (address: string) => Promise<"clear" | "listed" | "pending">;
}

export const PAYOUT_LEASE_MS = 60_000;
export const PAYOUT_BATCH_SIZE = 20;

type Accepted = Extract<SendAnswer, { kind: "accepted" }>;

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sentReport(answer: Accepted) {
  return {
    processorStatus: answer.processorStatus,
    processorTxId: answer.processorTxId,
    nextCheckAt: answer.checkAt ? answer.checkAt.toISOString() : null,
  };
}

/**
 * Claims that expired mid hand-over, for a processor that can be asked by id: it is asked, and what
 * it holds is recorded as the hand-over's answer (`sent`, then checked as usual), so no operator is
 * needed. A question that fails leaves the claim for the next batch (asking moves no money).
 */
async function recoverExpiredClaims(store: Store, options: PayoutBatchOptions): Promise<number> {
  const { processor, now, log } = options;
  if (processor.lookup === undefined) return 0;
  const lookup = processor.lookup.bind(processor);
  const expired = await expiredClaims(store, now.toISOString(), processor.name, options.batchSize);
  const answers: { payout: Payout; held: Accepted }[] = [];
  for (const payout of expired) {
    try {
      const held = await withTimeout(lookup(payout, now), Math.max(1, options.leaseMs / 2), "payout lookup");
      answers.push({ payout, held });
    } catch (error) {
      log.warn({ err: error, requestKey: payout.requestKey }, "payout lookup failed: asking again next batch");
    }
  }
  if (answers.length === 0) return 0;
  const at = new Date().toISOString();
  const recorded = await store.transaction(async (tx) => {
    let count = 0;
    for (const { payout, held } of answers) {
      // Under the expired claim's token: if its own batch recorded the hand-over meanwhile, nothing changes.
      if (await recordSent(tx, payout.requestKey, payout.claimToken ?? "", sentReport(held), at)) count += 1;
    }
    return count;
  });
  for (const { payout } of answers)
    log.warn({ requestKey: payout.requestKey }, "payout claim expired: the processor was asked and holds it");
  return recorded;
}

/** Expired claims of processors that cannot be asked go to reconciliation: nobody knows whether the money left. */
async function expireUnreported(store: Store, options: PayoutBatchOptions): Promise<number> {
  const { processor, now, log } = options;
  const expired = await store.transaction((tx) =>
    expireLeases(tx, now.toISOString(), options.batchSize, processor.lookup ? processor.name : ""),
  );
  for (const requestKey of expired) log.error({ requestKey }, "payout claim expired: needs reconciliation");
  return expired.length;
}

/** Whether the batch still holds a claimed payout right before its hand-over, renewing the batch's lease when it would not cover the hand-over. */
class BatchLease {
  #heldUntil: number;
  readonly #neededMs: number;

  constructor(
    private readonly store: Store,
    private readonly options: PayoutBatchOptions,
    claimed: readonly Payout[],
  ) {
    // The lease must cover the hand-over (at most half a lease) and then the recording of the
    // batch's accepted hand-overs (a quarter): renewed only when it would not.
    this.#neededMs = sendTimeoutMs(options) + options.leaseMs / 4;
    this.#heldUntil = claimed.reduce((min, p) => Math.min(min, Date.parse(p.leaseUntil ?? "")), Infinity);
  }

  async holds(payout: Payout, claimToken: string): Promise<boolean> {
    if (!(this.#heldUntil - Date.now() >= this.#neededMs)) {
      // Renewing answers which payouts the batch still holds; no other process can take them meanwhile.
      const renewedUntil = Date.now() + this.options.leaseMs;
      const stillHeld = await this.store.transaction((tx) =>
        renewBatchLease(tx, claimToken, new Date(renewedUntil).toISOString()),
      );
      this.#heldUntil = renewedUntil;
      return stillHeld.has(payout.requestKey);
    }
    // The lease holds, but an outcome may have been reported for this payout since the claim.
    const current = await findPayout(this.store, payout.requestKey);
    return current?.state === "sending" && current.claimToken === claimToken;
  }
}

/** Half the lease: an answer after that could arrive after the claim expired. */
function sendTimeoutMs(options: PayoutBatchOptions): number {
  return Math.max(1, options.leaseMs / 2);
}

/** Hands one claimed payout over; answers the accepted answer to record, or null when it is settled or set aside. */
async function handOver(
  store: Store,
  options: PayoutBatchOptions,
  payout: Payout,
  claimToken: string,
): Promise<Accepted | null> {
  const { processor, now, log } = options;
  let sent: SendAnswer;
  try {
    sent = await withTimeout(processor.send(payout, now), sendTimeoutMs(options), "payout hand-over");
  } catch (error) {
    log.error({ err: error, requestKey: payout.requestKey }, "payout hand-over unclear: needs reconciliation");
    await store.transaction((tx) =>
      markNeedsReconciliation(tx, payout.requestKey, claimToken, reason(error), new Date().toISOString()),
    );
    return null;
  }
  if (sent.kind === "accepted") return sent;
  const at = new Date().toISOString();
  const report = { outcome: "failed" as const, processorStatus: sent.processorStatus, processorTxId: null };
  const settled = await store.transaction((tx) =>
    settlePayout(tx, payout.requestKey, report, at, options.publicBaseUrl, { state: "sending", claimToken }),
  );
  if (!settled.ok)
    log.warn({ requestKey: payout.requestKey, error: settled.error }, "refused payout settled meanwhile");
  return null;
}

/**
 * The destinations of the rail's next queued payouts, screened just before their hand-over
 * (product §21), in the order a claim takes them; answers the ones cleared, for the claim. Listed
 * since the payout was accepted: nothing is handed over, the payout fails (`destination_screened`)
 * and the merchant is credited back. No answer: this payout and those behind it stay queued for a
 * later batch (one provider timeout per batch at most). A destination that is no crypto address (a
 * card refund) is not screened.
 */
async function screenQueued(
  store: Store,
  options: PayoutBatchOptions,
  screen: NonNullable<PayoutBatchOptions["screenDestination"]>,
): Promise<string[]> {
  const cleared: string[] = [];
  for (const payout of await queuedPayouts(store, options.batchSize, options.rail)) {
    const verdict = looksLikeAddress(payout.destination) ? await screen(payout.destination) : "clear";
    if (verdict === "pending") {
      options.log.warn({ requestKey: payout.requestKey }, "payout destination not screened: waiting");
      break;
    }
    if (verdict === "clear") {
      cleared.push(payout.requestKey);
      continue;
    }
    options.log.warn(
      { requestKey: payout.requestKey },
      "payout destination listed by screening: failed, not handed over",
    );
    const report = { outcome: "failed" as const, processorStatus: "destination_screened", processorTxId: null };
    const at = new Date().toISOString();
    const settled = await store.transaction((tx) =>
      settlePayout(tx, payout.requestKey, report, at, options.publicBaseUrl, { state: "queued" }),
    );
    if (!settled.ok)
      options.log.warn({ requestKey: payout.requestKey, error: settled.error }, "screened payout moved meanwhile");
  }
  return cleared;
}

/** Claims the batch: the screened payouts when the rail screens, else up to `batchSize` queued ones. */
async function claimBatch(store: Store, options: PayoutBatchOptions): Promise<Payout[]> {
  const { now } = options;
  const screened =
    options.screenDestination === undefined ? null : await screenQueued(store, options, options.screenDestination);
  const claim = {
    now: now.toISOString(),
    leaseUntil: new Date(now.getTime() + options.leaseMs).toISOString(),
    processor: options.processor.name,
  };
  return store.transaction((tx) =>
    screened === null
      ? claimPayouts(tx, { ...claim, limit: options.batchSize, rail: options.rail })
      : claimScreenedPayouts(tx, screened, claim),
  );
}

/**
 * Claims up to `batchSize` of the rail's queued payouts and hands each over. A claim is on disk
 * before any hand-over it allows (on SQLite, transactions return once fsynced). Accepted hand-overs
 * are recorded together in one transaction (one commit, one fsync on SQLite) rather than one commit
 * each; until then their claims hold them, and a crash in between leaves them to expire into
 * reconciliation, exactly as a crash during a single hand-over does.
 */
async function claimAndHandOver(store: Store, options: PayoutBatchOptions): Promise<number> {
  const { log } = options;
  const claimed = await claimBatch(store, options);
  const lease = new BatchLease(store, options, claimed);
  const accepted: { payout: Payout; claimToken: string; sent: Accepted }[] = [];
  for (const payout of claimed) {
    const claimToken = payout.claimToken ?? "";
    if (!(await lease.holds(payout, claimToken))) {
      log.warn({ requestKey: payout.requestKey }, "payout claim lost before its hand-over: not sent");
      continue;
    }
    const sent = await handOver(store, options, payout, claimToken);
    if (sent) accepted.push({ payout, claimToken, sent });
  }
  if (accepted.length === 0) return claimed.length;
  const at = new Date().toISOString();
  const recorded = await store.transaction(async (tx) => {
    const outcomes: boolean[] = [];
    for (const { payout, claimToken, sent } of accepted)
      outcomes.push(await recordSent(tx, payout.requestKey, claimToken, sentReport(sent), at));
    return outcomes;
  });
  accepted.forEach(({ payout, sent }, i) => {
    if (!recorded[i]) log.warn({ requestKey: payout.requestKey }, "payout settled or expired during its hand-over");
    // A card refund or an operator's payout: the one line an operator follows it by (never a secret).
    else
      log.info(
        { requestKey: payout.requestKey, rail: options.rail, processorTxId: sent.processorTxId ?? null },
        "payout handed over",
      );
  });
  return claimed.length;
}

interface DueSettlement {
  requestKey: string;
  merchantId: string;
  report: SettlementReport;
}

/** Asks the processor about up to `batchSize` sent payouts due for a check; answers the settled ones, the others rescheduled. */
async function checkDuePayouts(store: Store, options: PayoutBatchOptions): Promise<DueSettlement[]> {
  const { processor, now, log } = options;
  const due: DueSettlement[] = [];
  for (const payout of await duePayoutChecks(store, now.toISOString(), options.batchSize, options.rail)) {
    let checked: CheckAnswer;
    try {
      checked = await withTimeout(processor.check(payout, now), Math.max(1, options.leaseMs / 2), "payout check");
    } catch (error) {
      // Asking again is harmless: it moves no money. Try later.
      log.warn({ err: error, requestKey: payout.requestKey }, "payout check failed");
      checked = {
        kind: "pending",
        processorStatus: payout.processorStatus ?? "unknown",
        checkAt: new Date(now.getTime() + options.leaseMs),
      };
    }
    if (checked.kind === "pending") {
      const { processorStatus, checkAt } = checked;
      const report = { processorStatus, nextCheckAt: checkAt ? checkAt.toISOString() : null };
      await store.transaction((tx) => reschedulePayoutCheck(tx, payout.requestKey, report, new Date().toISOString()));
      continue;
    }
    const { outcome, processorStatus, processorTxId } = checked;
    due.push({
      requestKey: payout.requestKey,
      merchantId: payout.merchantId,
      report: { outcome, processorStatus, processorTxId },
    });
  }
  return due;
}

/**
 * The batch's outcomes are settled in one transaction (one commit: on PostgreSQL one WAL flush
 * instead of one per payout), in the order of their merchants so that balance rows (a failure
 * credits one back) are locked in the order every writer locks them. If that transaction fails,
 * each settlement is tried in its own, so that one payout that cannot settle holds no other back.
 */
async function settleDue(store: Store, options: PayoutBatchOptions, due: DueSettlement[]): Promise<number> {
  if (due.length === 0) return 0;
  due.sort(
    (a, b) =>
      compareKeys(merchantAccount(a.merchantId), merchantAccount(b.merchantId)) ||
      compareKeys(a.requestKey, b.requestKey),
  );
  const at = new Date().toISOString();
  const settle = (tx: Tx, d: DueSettlement) =>
    settlePayout(tx, d.requestKey, d.report, at, options.publicBaseUrl, { state: "sent" });
  try {
    const together = await store.transaction(async (tx) => {
      const settled: boolean[] = [];
      for (const d of due) settled.push((await settle(tx, d)).ok);
      return settled;
    });
    return together.filter(Boolean).length;
  } catch (error) {
    options.log.warn({ err: error, payouts: due.length }, "settling the batch together failed: settling each alone");
  }
  const outcomes = await Promise.allSettled(due.map((d) => store.transaction((tx) => settle(tx, d))));
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
  // As before: a failing settlement fails the batch (the loop logs it); the others stand.
  if (failed) throw failed.reason;
  return outcomes.filter((o) => o.status === "fulfilled" && o.value.ok).length;
}

/**
 * One bounded batch: expired claims are recovered or go to reconciliation, up to `batchSize`
 * queued payouts of the rail are claimed and handed over, and up to `batchSize` sent payouts are
 * asked for their outcome. Answers how many payouts it moved.
 */
export async function runPayoutBatch(store: Store, options: PayoutBatchOptions): Promise<number> {
  let handled = 0;
  const { railPolicy } = options;
  if (railPolicy) handled += await store.transaction((tx) => assignPayoutRails(tx, railPolicy, options.batchSize));
  handled += await recoverExpiredClaims(store, options);
  handled += await expireUnreported(store, options);
  handled += await claimAndHandOver(store, options);
  handled += await settleDue(store, options, await checkDuePayouts(store, options));
  return handled;
}
