// Starts every background worker of a process and stops them together on shutdown.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { type CallbackWorkerOptions, startCallbackWorker } from "./callbacks.ts";
import { startExpiryLoop } from "./expiry.ts";
import type { Loop } from "./loop.ts";
import { startPayoutLoop } from "./payouts.ts";
import { startRateLoop } from "./rates.ts";
import { startRefundClaimLoop } from "./refundClaims.ts";
import { startRetentionLoop } from "./retention.ts";
import { startScreeningLoop } from "./screening.ts";
import { startSubscriptionLoop } from "./subscriptions.ts";
import { NO_TEST_HOOKS, type TestHooks } from "./testHooks.ts";

export interface Workers {
  loops: Record<string, Loop>;
  stop(): Promise<void>;
}

export interface WorkerOptions {
  /** When false the loops never tick by themselves; callers drive them with runOnce (tests). */
  autoStart?: boolean;
  /** What a test process asked for in its environment (main.ts reads it); none by default. */
  testHooks?: TestHooks;
  /** The callback worker's ports (the simulation's merchant endpoints and resolver); HTTP and DNS by default. */
  callbacks?: Pick<CallbackWorkerOptions, "post" | "lookup" | "answerKept">;
}

export async function startWorkers(
  ctx: ServiceContext,
  log: FastifyBaseLogger,
  options: WorkerOptions = {},
): Promise<Workers> {
  const loops: Record<string, Loop> = {};
  const autoStart = options.autoStart ?? true;
  loops.expiry = startExpiryLoop(ctx, log, autoStart);
  // Every hand-over rail of the configuration (sandbox; or operator, and the card provider's when one is set).
  loops.payouts = startPayoutLoop(ctx, log, { autoStart });
  loops.refundClaims = startRefundClaimLoop(ctx, log, autoStart);
  loops.subscriptions = startSubscriptionLoop(ctx, log, autoStart);
  if (ctx.config.serviceMode === "live" && ctx.wallet !== null) {
    // The chain's loops (and viem, about 16 MiB) load only where they can run: live, with a wallet.
    const [{ startChainPayoutLoop }, { startScannerLoop }] = await Promise.all([
      import("./chainPayouts.ts"),
      import("./scanner.ts"),
    ]);
    const testHooks = options.testHooks ?? NO_TEST_HOOKS;
    loops.chainPayouts = startChainPayoutLoop(ctx, log, { autoStart, testHooks });
    loops.scanner = startScannerLoop(ctx, log, autoStart, testHooks);
    loops.screening = startScreeningLoop(ctx, log, autoStart);
  }
  loops.retention = startRetentionLoop(ctx, log, autoStart);
  loops.rates = startRateLoop(ctx, log, autoStart);
  loops.callbacks = startCallbackWorker(ctx, log, {
    autoStart,
    timeoutMs: ctx.config.callbackTimeoutMs,
    ...options.callbacks,
  });
  return {
    loops,
    stop: async () => {
      await Promise.all(Object.values(loops).map((loop) => loop.stop()));
    },
  };
}
