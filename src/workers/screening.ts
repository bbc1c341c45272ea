// The screening worker (product §21): screens the senders of payments and customers' deposits recorded before screening could answer, retrying with a bounded backoff.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { screenWaitingDeposits } from "../app/screenDeposits.ts";
import { screenWaitingPayments } from "../app/screening.ts";
import { type Loop, startLoop } from "./loop.ts";

/** Pause of an idle worker: a payment waits about this long after the scanner recorded it. */
export const SCREENING_IDLE_MS = 1000;

export function startScreeningLoop(ctx: ServiceContext, log: FastifyBaseLogger, autoStart: boolean): Loop {
  return startLoop({
    name: "screening",
    idleMs: SCREENING_IDLE_MS,
    autoStart,
    log,
    // Invoice payments, then customers' deposits (product §30): both wait for the same sources.
    runBatch: async () => (await screenWaitingPayments(ctx, log)) + (await screenWaitingDeposits(ctx, log)),
  });
}
