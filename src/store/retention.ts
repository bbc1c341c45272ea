// Deletes rows kept only for a while: callback attempts and dashboard audit rows older than their retention.
import type { Tx } from "./store.ts";

/** Rows deleted per table per transaction: bounds lock time and the size of one statement. */
export const RETENTION_BATCH_SIZE = 1000;

export interface RetentionCutoffs {
  /** Callback attempts started before this (ISO 8601) are deleted. */
  callbackAttemptsBefore: string;
  /** Dashboard audit rows created before this (ISO 8601) are deleted. */
  auditBefore: string;
}

/**
 * Deletes at most `batchSize` of the oldest expired rows of each table; answers how many went. Safe
 * with several processes: a row two of them pick is deleted once and the other deletes nothing.
 * Only the record of an attempt goes: the event keeps its attempt count, so later attempts keep
 * their numbers.
 */
export async function deleteExpiredRows(
  tx: Tx,
  cutoffs: RetentionCutoffs,
  batchSize = RETENTION_BATCH_SIZE,
): Promise<{ callbackAttempts: number; auditRows: number }> {
  const attempts = await tx.db
    .deleteFrom("callback_attempts")
    .where("id", "in", (qb) =>
      qb
        .selectFrom("callback_attempts")
        .select("id")
        .where("started_at", "<", cutoffs.callbackAttemptsBefore)
        .orderBy("started_at")
        .limit(batchSize),
    )
    .executeTakeFirst();
  const audit = await tx.db
    .deleteFrom("dashboard_audit")
    .where("id", "in", (qb) =>
      qb
        .selectFrom("dashboard_audit")
        .select("id")
        .where("created_at", "<", cutoffs.auditBefore)
        .orderBy("created_at")
        .limit(batchSize),
    )
    .executeTakeFirst();
  return { callbackAttempts: Number(attempts.numDeletedRows), auditRows: Number(audit.numDeletedRows) };
}
