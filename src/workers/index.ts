// Starts every background worker of a process and stops them together on shutdown.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { cardRefundProcessor } from "../app/refundByCard.ts";
import { startCallbackWorker } from "./callbacks.ts";
import { startExpiryLoop } from "./expiry.ts";
import type { Loop } from "./loop.ts";
import { payoutProcessorFor, startPayoutLoop } from "./payouts.ts";
import { startRateLoop } from "./rates.ts";
import { startRefundClaimLoop } from "./refundClaims.ts";
import { startRetentionLoop } from "./retention.ts";
import { startScreeningLoop } from "./screening.ts";

export interface Workers {
  loops: Record<string, Loop>;
  stop(): Promise<void>;
}

export interface WorkerOptions {
  /** When false the loops never tick by themselves; callers drive them with runOnce (tests). */
  autoStart?: boolean;
}

export async function startWorkers(
  ctx: ServiceContext,
  log: FastifyBaseLogger,
  options: WorkerOptions = {},
): Promise<Workers> {
  const loops: Record<string, Loop> = {};
  const autoStart = options.autoStart ?? true;
  loops.expiry = startExpiryLoop(ctx, log, autoStart);
  // Live with a card provider: refunds of card payments go to the provider, other payouts as before.
  loops.payouts = startPayoutLoop(
    ctx.store,
    ctx.config,
    log,
    ctx.cardProvider === null
      ? { autoStart }
      : { autoStart, processor: cardRefundProcessor(ctx.store, ctx.cardProvider, payoutProcessorFor(ctx.config)) },
  );
  loops.refundClaims = startRefundClaimLoop(ctx, log, autoStart);
  if (ctx.config.serviceMode === "live" && ctx.wallet !== null) {
    // The chain's loops (and viem, about 16 MiB) load only where they can run: live, with a wallet.
    const [{ startChainPayoutLoop }, { startScannerLoop }] = await Promise.all([
      import("./chainPayouts.ts"),
      import("./scanner.ts"),
    ]);
    loops.chainPayouts = startChainPayoutLoop(ctx, log, { autoStart });
    loops.scanner = startScannerLoop(ctx, log, autoStart);
    loops.screening = startScreeningLoop(ctx, log, autoStart);
  }
  loops.retention = startRetentionLoop(ctx, log, autoStart);
  loops.rates = startRateLoop(ctx, log, autoStart);
  loops.callbacks = startCallbackWorker(ctx, log, { autoStart, timeoutMs: ctx.config.callbackTimeoutMs });
  return {
    loops,
    stop: async () => {
      await Promise.all(Object.values(loops).map((loop) => loop.stop()));
    },
  };
}
