// Payout worker: hands accepted payouts to a payout processor, asks it for outcomes, and sets unclear hand-overs aside for reconciliation.
import { randomBytes } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import type { CheckAnswer, PayoutProcessor, SendAnswer } from "../app/payoutProcessor.ts";
import type { Config } from "../config.ts";
import { merchantAccount } from "../domain/ledger.ts";
import {
  claimPayouts,
  duePayoutChecks,
  expiredClaims,
  expireLeases,
  findPayout,
  markNeedsReconciliation,
  type Payout,
  recordSent,
  renewBatchLease,
  reschedulePayoutCheck,
  type SettlementReport,
  settlePayout,
} from "../store/payouts.ts";
import type { Store, Tx } from "../store/store.ts";
import { type Loop, startLoop } from "./loop.ts";

export type { CheckAnswer, PayoutProcessor, SendAnswer } from "../app/payoutProcessor.ts";

/** Processor status strings of the sandbox processor. */
export const SANDBOX_PROCESSOR_STATUS = {
  submitted: "submitted",
  completed: "confirmed",
  failed: "rejected",
} as const;

/** A transaction id of the simulated network. */
export function sandboxTxId(): string {
  return `0x${randomBytes(32).toString("hex")}`;
}

/**
 * Sandbox: accepts every payout at once and settles it as completed SANDBOX_PAYOUT_DELAY_MS after
 * it was accepted (0: never by itself). POST /sandbox/v1/payouts/{requestId}/outcome settles it earlier.
 */
export function sandboxPayoutProcessor(delayMs: number): PayoutProcessor {
  const dueAt = (payout: Payout) => new Date(Date.parse(payout.createdAt) + delayMs);
  // The simulated network holds each payout under its request key, accepted whenever it was first
  // handed over, whose outcome follows from the payout alone: asking by id answers what a
  // hand-over answered (or would have: taking a key a second time changes nothing).
  const accepted = (payout: Payout): Extract<SendAnswer, { kind: "accepted" }> => ({
    kind: "accepted",
    processorStatus: SANDBOX_PROCESSOR_STATUS.submitted,
    processorTxId: null,
    checkAt: delayMs > 0 ? dueAt(payout) : null,
  });
  return {
    name: "sandbox",
    send: async (payout) => accepted(payout),
    lookup: async (payout) => accepted(payout),
    check: async (payout, now) =>
      delayMs > 0 && now >= dueAt(payout)
        ? {
            kind: "settled",
            outcome: "completed",
            processorStatus: SANDBOX_PROCESSOR_STATUS.completed,
            processorTxId: payout.processorTxId ?? sandboxTxId(),
          }
        : {
            kind: "pending",
            processorStatus: payout.processorStatus ?? "submitted",
            checkAt: delayMs > 0 ? dueAt(payout) : null,
          },
  };
}

/**
 * Live mode without an integrated processor: payouts wait for an operator, who pays them out and
 * records the outcome with POST /admin/v1/payouts/{requestId}/outcome.
 */
export function operatorPayoutProcessor(): PayoutProcessor {
  return {
    name: "operator",
    send: async () => ({ kind: "accepted", processorStatus: "awaiting_operator", processorTxId: null, checkAt: null }),
    check: async (payout) => ({
      kind: "pending",
      processorStatus: payout.processorStatus ?? "awaiting_operator",
      checkAt: null,
    }),
  };
}

export function payoutProcessorFor(config: Config): PayoutProcessor {
  return config.serviceMode === "sandbox"
    ? sandboxPayoutProcessor(config.sandboxPayoutDelayMs)
    : operatorPayoutProcessor();
}

export interface PayoutBatchOptions {
  processor: PayoutProcessor;
  now: Date;
  /** How long a claim lasts; a hand-over not reported by then goes to reconciliation. */
  leaseMs: number;
  /** Bound on the payouts each step of one batch touches. */
  batchSize: number;
  /** Base of the links in the callbacks that a settlement records (a refund moves its invoice). */
  publicBaseUrl: string;
  log: FastifyBaseLogger;
  /** Leaves payouts in currencies of configured networks to the chain worker (live mode, wallet set). */
  excludeChainNetworks?: boolean;
}

export const PAYOUT_LEASE_MS = 60_000;
export const PAYOUT_BATCH_SIZE = 20;

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

/**
 * Claims that expired mid hand-over, for a processor that can be asked by id: it is asked, and what
 * it holds is recorded as the hand-over's answer (`sent`, then checked as usual), so no operator is
 * needed. A question that fails leaves the claim for the next batch (asking moves no money).
 */
async function recoverExpiredClaims(store: Store, options: PayoutBatchOptions): Promise<number> {
  const { processor, now, log } = options;
  if (processor.lookup === undefined) return 0;
  const expired = await expiredClaims(store, now.toISOString(), processor.name, options.batchSize);
  const answers: { payout: Payout; held: Extract<SendAnswer, { kind: "accepted" }> }[] = [];
  for (const payout of expired) {
    try {
      const held = await withTimeout(processor.lookup(payout, now), Math.max(1, options.leaseMs / 2), "payout lookup");
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
      const report = {
        processorStatus: held.processorStatus,
        processorTxId: held.processorTxId,
        nextCheckAt: held.checkAt ? held.checkAt.toISOString() : null,
      };
      if (await recordSent(tx, payout.requestKey, payout.claimToken ?? "", report, at)) count += 1;
    }
    return count;
  });
  for (const { payout } of answers)
    log.warn({ requestKey: payout.requestKey }, "payout claim expired: the processor was asked and holds it");
  return recorded;
}

/**
 * One bounded batch: expired claims go to reconciliation, up to `batchSize` queued payouts are
 * claimed and handed over, and up to `batchSize` sent payouts are asked for their outcome.
 * Answers how many payouts it moved.
 */
export async function runPayoutBatch(store: Store, options: PayoutBatchOptions): Promise<number> {
  const { processor, now, log } = options;
  const nowIso = now.toISOString();
  let handled = 0;

  handled += await recoverExpiredClaims(store, options);
  const expired = await store.transaction((tx) =>
    expireLeases(tx, nowIso, options.batchSize, processor.lookup ? processor.name : ""),
  );
  for (const requestKey of expired) log.error({ requestKey }, "payout claim expired: needs reconciliation");
  handled += expired.length;

  // A claim is on disk before any hand-over it allows (on SQLite, transactions return once fsynced).
  const claimed = await store.transaction((tx) =>
    claimPayouts(tx, {
      now: nowIso,
      leaseUntil: new Date(now.getTime() + options.leaseMs).toISOString(),
      limit: options.batchSize,
      processor: processor.name,
      excludeChainNetworks: options.excludeChainNetworks ?? false,
    }),
  );
  // Accepted hand-overs are recorded together in one transaction (one commit, one fsync on SQLite)
  // rather than one commit each; until then their claims hold them, and a crash in between leaves
  // them to expire into reconciliation, exactly as a crash during a single hand-over does.
  const accepted: { payout: Payout; claimToken: string; sent: Extract<SendAnswer, { kind: "accepted" }> }[] = [];
  const sendTimeoutMs = Math.max(1, options.leaseMs / 2);
  // Before each hand-over the batch's lease must cover the hand-over (at most half a lease) and then
  // the recording of the batch's accepted hand-overs (a quarter): renewed only when it would not.
  const neededMs = sendTimeoutMs + options.leaseMs / 4;
  let leaseHeldUntil = claimed.reduce((min, p) => Math.min(min, Date.parse(p.leaseUntil ?? "")), Infinity);
  for (const payout of claimed) {
    handled += 1;
    const claimToken = payout.claimToken ?? "";
    let held: boolean;
    if (!(leaseHeldUntil - Date.now() >= neededMs)) {
      // Renewing answers which payouts the batch still holds; no other process can take them meanwhile.
      const renewedUntil = Date.now() + options.leaseMs;
      const stillHeld = await store.transaction((tx) =>
        renewBatchLease(tx, claimToken, new Date(renewedUntil).toISOString()),
      );
      leaseHeldUntil = renewedUntil;
      held = stillHeld.has(payout.requestKey);
    } else {
      // The lease holds, but an outcome may have been reported for this payout since the claim.
      const current = await findPayout(store, payout.requestKey);
      held = current?.state === "sending" && current.claimToken === claimToken;
    }
    if (!held) {
      log.warn({ requestKey: payout.requestKey }, "payout claim lost before its hand-over: not sent");
      continue;
    }
    let sent: SendAnswer;
    try {
      // Half the lease: an answer after that could arrive after the claim expired.
      sent = await withTimeout(processor.send(payout, now), sendTimeoutMs, "payout hand-over");
    } catch (error) {
      log.error({ err: error, requestKey: payout.requestKey }, "payout hand-over unclear: needs reconciliation");
      await store.transaction((tx) =>
        markNeedsReconciliation(tx, payout.requestKey, claimToken, reason(error), new Date().toISOString()),
      );
      continue;
    }
    if (sent.kind === "refused") {
      const at = new Date().toISOString();
      const settled = await store.transaction((tx) =>
        settlePayout(
          tx,
          payout.requestKey,
          { outcome: "failed", processorStatus: sent.processorStatus, processorTxId: null },
          at,
          options.publicBaseUrl,
          { state: "sending", claimToken },
        ),
      );
      if (!settled.ok)
        log.warn({ requestKey: payout.requestKey, error: settled.error }, "refused payout settled meanwhile");
      continue;
    }
    accepted.push({ payout, claimToken, sent });
  }
  if (accepted.length > 0) {
    const at = new Date().toISOString();
    const recorded = await store.transaction(async (tx) => {
      const outcomes: boolean[] = [];
      for (const { payout, claimToken, sent } of accepted) {
        outcomes.push(
          await recordSent(
            tx,
            payout.requestKey,
            claimToken,
            {
              processorStatus: sent.processorStatus,
              processorTxId: sent.processorTxId,
              nextCheckAt: sent.checkAt ? sent.checkAt.toISOString() : null,
            },
            at,
          ),
        );
      }
      return outcomes;
    });
    accepted.forEach(({ payout }, i) => {
      if (!recorded[i]) log.warn({ requestKey: payout.requestKey }, "payout settled or expired during its hand-over");
    });
  }

  // The batch's outcomes are settled in one transaction (one commit: on PostgreSQL one WAL flush
  // instead of one per payout), in the order of their merchants so that balance rows (a failure
  // credits one back) are locked in the order every writer locks them. If that transaction fails,
  // each settlement is tried in its own, so that one payout that cannot settle holds no other back.
  const due: { requestKey: string; merchantId: string; report: SettlementReport }[] = [];
  for (const payout of await duePayoutChecks(store, nowIso, options.batchSize)) {
    let checked: CheckAnswer;
    try {
      checked = await withTimeout(processor.check(payout, now), Math.max(1, options.leaseMs / 2), "payout check");
    } catch (error) {
      // Asking again is harmless: it moves no money. Try later.
      log.warn({ err: error, requestKey: payout.requestKey }, "payout check failed");
      await store.transaction((tx) =>
        reschedulePayoutCheck(
          tx,
          payout.requestKey,
          {
            processorStatus: payout.processorStatus ?? "unknown",
            nextCheckAt: new Date(now.getTime() + options.leaseMs).toISOString(),
          },
          new Date().toISOString(),
        ),
      );
      continue;
    }
    if (checked.kind === "pending") {
      await store.transaction((tx) =>
        reschedulePayoutCheck(
          tx,
          payout.requestKey,
          {
            processorStatus: checked.processorStatus,
            nextCheckAt: checked.checkAt ? checked.checkAt.toISOString() : null,
          },
          new Date().toISOString(),
        ),
      );
      continue;
    }
    due.push({
      requestKey: payout.requestKey,
      merchantId: payout.merchantId,
      report: {
        outcome: checked.outcome,
        processorStatus: checked.processorStatus,
        processorTxId: checked.processorTxId,
      },
    });
  }
  due.sort(
    (a, b) =>
      compareKeys(merchantAccount(a.merchantId), merchantAccount(b.merchantId)) ||
      compareKeys(a.requestKey, b.requestKey),
  );
  const settle = (tx: Tx, d: (typeof due)[number], at: string) =>
    settlePayout(tx, d.requestKey, d.report, at, options.publicBaseUrl, { state: "sent" });
  if (due.length > 0) {
    const at = new Date().toISOString();
    let together: boolean[] | null = null;
    try {
      together = await store.transaction(async (tx) => {
        const settled: boolean[] = [];
        for (const d of due) settled.push((await settle(tx, d, at)).ok);
        return settled;
      });
    } catch (error) {
      log.warn({ err: error, payouts: due.length }, "settling the batch together failed: settling each alone");
    }
    if (together) {
      handled += together.filter(Boolean).length;
    } else {
      const outcomes = await Promise.allSettled(due.map((d) => store.transaction((tx) => settle(tx, d, at))));
      for (const outcome of outcomes) {
        if (outcome.status === "fulfilled" && outcome.value.ok) handled += 1;
      }
      const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
      // As before: a failing settlement fails the batch (the loop logs it); the others stand.
      if (failed) throw failed.reason;
    }
  }
  return handled;
}

export interface PayoutLoopOptions {
  autoStart: boolean;
  processor?: PayoutProcessor;
  idleMs?: number;
}

export function startPayoutLoop(
  store: Store,
  config: Config,
  log: FastifyBaseLogger,
  options: PayoutLoopOptions,
): Loop {
  const processor = options.processor ?? payoutProcessorFor(config);
  return startLoop({
    name: "payouts",
    idleMs: options.idleMs ?? 1000,
    autoStart: options.autoStart,
    log,
    runBatch: () =>
      runPayoutBatch(store, {
        processor,
        now: new Date(),
        leaseMs: PAYOUT_LEASE_MS,
        batchSize: PAYOUT_BATCH_SIZE,
        publicBaseUrl: config.publicBaseUrl,
        log,
        excludeChainNetworks: config.serviceMode === "live" && config.walletMnemonic !== null,
      }),
  });
}
