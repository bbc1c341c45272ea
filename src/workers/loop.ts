// A background loop: runs one bounded batch of work at a time, sleeps when idle, and stops cleanly.
import type { FastifyBaseLogger } from "fastify";

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

export function startLoop(options: LoopOptions): Loop {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let current: Promise<number> | null = null;

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
    try {
      handled = await runOnce();
    } catch (error) {
      options.log.error({ err: error, worker: options.name }, "worker batch failed");
    }
    if (!stopped) timer = setTimeout(tick, handled > 0 ? 0 : options.idleMs);
  };
  if (options.autoStart ?? true) timer = setTimeout(tick, options.idleMs);

  return {
    runOnce,
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (current) await current.catch(() => 0);
    },
  };
}
