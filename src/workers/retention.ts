// The retention worker: deletes callback attempts and dashboard audit rows older than CALLBACK_ATTEMPT_RETENTION_DAYS and AUDIT_RETENTION_DAYS.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { deleteExpiredRows, RETENTION_BATCH_SIZE } from "../store/retention.ts";
import { type Loop, startLoop } from "./loop.ts";

/** How long an idle worker sleeps: rows outlive their retention by at most about this long. */
export const RETENTION_IDLE_MS = 60_000;

const DAY_MS = 86_400_000;

/** One batch: at most RETENTION_BATCH_SIZE rows of each table, in one transaction. */
export async function runRetentionBatch(ctx: ServiceContext, now = Date.now()): Promise<number> {
  const cutoffs = {
    callbackAttemptsBefore: new Date(now - ctx.config.callbackAttemptRetentionDays * DAY_MS).toISOString(),
    auditBefore: new Date(now - ctx.config.auditRetentionDays * DAY_MS).toISOString(),
  };
  const deleted = await ctx.store.transaction((tx) => deleteExpiredRows(tx, cutoffs, RETENTION_BATCH_SIZE));
  return deleted.callbackAttempts + deleted.auditRows;
}

export function startRetentionLoop(ctx: ServiceContext, log: FastifyBaseLogger, autoStart: boolean): Loop {
  return startLoop({
    name: "retention",
    idleMs: RETENTION_IDLE_MS,
    autoStart,
    log,
    runBatch: async () => {
      const deleted = await runRetentionBatch(ctx);
      if (deleted > 0) log.info({ worker: "retention", deleted }, "rows past their retention deleted");
      return deleted;
    },
  });
}
