// The refund claim worker: returns refunds whose claim link was not used within 30 days to the merchant's balance (product §25).
import type { FastifyBaseLogger } from "fastify";
import { CLAIM_EXPIRY_BATCH_SIZE, expireRefundClaims } from "../app/claimRefund.ts";
import type { ServiceContext } from "../app/context.ts";
import { nowIso } from "../store/store.ts";
import { type Loop, startLoop } from "./loop.ts";

/** How long an idle worker sleeps: a claim expires at most about this long after its time. */
export const CLAIM_EXPIRY_IDLE_MS = 5000;

export function startRefundClaimLoop(ctx: ServiceContext, log: FastifyBaseLogger, autoStart: boolean): Loop {
  return startLoop({
    name: "refundClaims",
    idleMs: CLAIM_EXPIRY_IDLE_MS,
    autoStart,
    log,
    runBatch: async () => {
      const handled = await expireRefundClaims(ctx.store, nowIso(), CLAIM_EXPIRY_BATCH_SIZE, ctx.config.publicBaseUrl);
      if (handled > 0) log.info({ worker: "refundClaims", handled }, "expired refund claims returned");
      return handled;
    },
  });
}
