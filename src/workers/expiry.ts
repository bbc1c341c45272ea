// The expiry worker: moves invoices whose expires_at passed to expired (nothing paid) or failed (partly paid).
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { expireDueInvoices } from "../app/expireInvoices.ts";
import { nowIso } from "../store/store.ts";
import { type Loop, startLoop } from "./loop.ts";

/** Invoices handled per transaction: bounds lock time and memory whatever the backlog. */
export const EXPIRY_BATCH_SIZE = 100;
/** How long an idle worker sleeps: an invoice expires at most about this long after its expires_at. */
export const EXPIRY_IDLE_MS = 1000;

/**
 * All state lives in the invoices table, so a restarted process simply finds what is due; several
 * processes on one PostgreSQL claim disjoint rows (FOR UPDATE SKIP LOCKED).
 */
export function startExpiryLoop(ctx: ServiceContext, log: FastifyBaseLogger, autoStart: boolean): Loop {
  return startLoop({
    name: "expiry",
    idleMs: EXPIRY_IDLE_MS,
    autoStart,
    log,
    runBatch: async () => {
      const handled = await expireDueInvoices(ctx.store, nowIso(), EXPIRY_BATCH_SIZE, ctx.config.publicBaseUrl);
      if (handled > 0) log.info({ worker: "expiry", handled }, "due invoices handled");
      return handled;
    },
  });
}
