// A background loop: runs one bounded batch of work at a time, sleeps when idle, and stops cleanly.
import type { FastifyBaseLogger } from "fastify";
import { isStoreUnavailable } from "../store/unavailable.ts";

/** Longest pause after failed batches: a worker whose database is down looks again at least this often. */
export const LOOP_MAX_BACKOFF_MS = 10_000;

/** The pause after `failures` batches in a row failed: doubles from idleMs, bounded by LOOP_MAX_BACKOFF_MS. */
export function backoffMs(idleMs: number, failures: number): number {
  return Math.min(Math.max(idleMs, 1) * 2 ** Math.min(failures, 20), Math.max(idleMs, LOOP_MAX_BACKOFF_MS));
}

export interface LoopOptions {
  name: string;
  /** Pause after a batch that found nothing to do. */
  idleMs: number;
  /** Processes at most one batch; answers how many items it handled. */
  runBatch: () => Promise<number>;
  log: FastifyBaseLogger;
  /** When false, batches run only through runOnce. */
  autoStart?: boolean;
}

export interface Loop {
  /** Resolves once the batch in progress (if any) has finished; no new batch starts. */
  stop(): Promise<void>;
  /** Runs one batch now (tests use it to avoid waiting for the timer). */
  runOnce(): Promise<number>;
}

/** A loop that work finished elsewhere can wake (the callback worker's attempts free slots). */
export interface WakeableLoop extends Loop {
  /** Runs the next batch at once instead of after the idle pause (not during a failure's backoff). */
  wake(): void;
}

export function startLoop(options: LoopOptions): WakeableLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let current: Promise<number> | null = null;
  let failures = 0;
  let woken = false;
  const autoStart = options.autoStart ?? true;

  const runOnce = async (): Promise<number> => {
    while (current) await current.catch(() => 0);
    current = options.runBatch();
    try {
      return await current;
    } finally {
      current = null;
    }
  };

  const tick = async () => {
    timer = null;
    if (stopped) return;
    let handled = 0;
    let delayMs = options.idleMs;
    woken = false;
    try {
      handled = await runOnce();
      failures = 0;
      if (handled > 0 || woken) delayMs = 0;
    } catch (error) {
      // A failed batch (the database down, a lost connection) never ends the loop: it waits longer
      // after each failure in a row, up to a bound, and tries again.
      failures++;
      delayMs = backoffMs(options.idleMs, failures);
      const fields = { err: error, worker: options.name, failures, retryInMs: delayMs };
      if (isStoreUnavailable(error)) options.log.warn(fields, "worker batch failed: store unavailable");
      else options.log.error(fields, "worker batch failed");
    }
    if (!stopped) timer = setTimeout(tick, delayMs);
  };
  if (autoStart) timer = setTimeout(tick, options.idleMs);

  return {
    runOnce,
    wake: () => {
      if (stopped || !autoStart) return;
      // Idle: the next batch now. A batch running: the one after it starts at once.
      if (timer && failures === 0) {
        clearTimeout(timer);
        timer = setTimeout(tick, 0);
      } else woken = true;
    },
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (current) await current.catch(() => 0);
    },
  };
}
