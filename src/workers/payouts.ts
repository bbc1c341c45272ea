// Payout worker: a loop that runs one batch per hand-over rail (sandbox, operator, card provider); the batch itself is app/handOverPayouts.ts.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { PAYOUT_BATCH_SIZE, PAYOUT_LEASE_MS, runPayoutBatch } from "../app/handOverPayouts.ts";
import { handOverProcessors, payoutRailPolicy } from "../app/payoutProcessors.ts";
import { screenPayoutDestination } from "../app/screening.ts";
import { type Loop, startLoop } from "./loop.ts";

// What tests and tools drive directly, where they always found it.
export {
  PAYOUT_BATCH_SIZE,
  PAYOUT_LEASE_MS,
  type PayoutBatchOptions,
  runPayoutBatch,
} from "../app/handOverPayouts.ts";
export {
  operatorPayoutProcessor,
  payoutProcessorFor,
  SANDBOX_PROCESSOR_STATUS,
  sandboxPayoutProcessor,
  sandboxTxId,
} from "../app/payoutProcessors.ts";
export type { CheckAnswer, PayoutProcessor, SendAnswer } from "../domain/payout.ts";

export interface PayoutLoopOptions {
  autoStart: boolean;
  idleMs?: number;
}

export function startPayoutLoop(ctx: ServiceContext, log: FastifyBaseLogger, options: PayoutLoopOptions): Loop {
  const rails = handOverProcessors(ctx);
  const railPolicy = payoutRailPolicy(ctx);
  return startLoop({
    name: "payouts",
    idleMs: options.idleMs ?? 1000,
    autoStart: options.autoStart,
    log,
    runBatch: async () => {
      let handled = 0;
      for (const [i, { rail, processor }] of rails.entries()) {
        handled += await runPayoutBatch(ctx.store, {
          processor,
          rail,
          // Payouts accepted without a rail get theirs once per batch, before any rail claims.
          ...(i === 0 ? { railPolicy } : {}),
          now: new Date(),
          leaseMs: PAYOUT_LEASE_MS,
          batchSize: PAYOUT_BATCH_SIZE,
          publicBaseUrl: ctx.config.publicBaseUrl,
          log,
          // A destination listed since the payout was accepted fails it; no answer: it waits (product §21).
          screenDestination: (address) => screenPayoutDestination(ctx, address),
        });
      }
      return handled;
    },
  });
}
