// The subscription worker: takes the schedule's due steps (renewal invoices, period starts, grace ends, cancellations at period end) on real time.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { runDueSubscriptions } from "../app/subscriptionSchedule.ts";
import { type Loop, startLoop } from "./loop.ts";

/** How long an idle worker sleeps: a step is taken at most about this long after it falls due. */
export const SUBSCRIPTIONS_IDLE_MS = 5000;

/**
 * Every step is decided again under the subscription's row lock, so several processes on one
 * PostgreSQL may run this loop at once: each step is still taken once.
 */
export function startSubscriptionLoop(ctx: ServiceContext, log: FastifyBaseLogger, autoStart: boolean): Loop {
  return startLoop({
    name: "subscriptions",
    idleMs: SUBSCRIPTIONS_IDLE_MS,
    autoStart,
    log,
    runBatch: async () => {
      const taken = await runDueSubscriptions(ctx);
      if (taken > 0) log.info({ worker: "subscriptions", taken }, "subscription steps taken");
      return taken;
    },
  });
}
