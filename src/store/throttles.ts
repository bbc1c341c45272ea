// Attempt counters of the throttles (product §18): one atomic upsert reserves an attempt before it is evaluated.
import { sql } from "kysely";
import type { Tx } from "./store.ts";

/** What one reservation answered: this attempt's number in the subject's window, and when that window began. */
export interface Reserved {
  subject: string;
  attempts: number;
  windowStartedAt: string;
}

/**
 * Counts one attempt of `subject` in its fixed window (which starts again once `windowMs` has
 * passed since it began). One statement, atomic on both engines: on PostgreSQL concurrent upserts
 * of a subject wait on its row and each sees the count the previous one left, so N parallel
 * attempts, from any number of processes, are numbered 1..N.
 */
export async function reserveAttempt(tx: Tx, subject: string, windowMs: number, nowMs: number): Promise<Reserved> {
  const now = new Date(nowMs).toISOString();
  const expiredBefore = new Date(nowMs - windowMs).toISOString();
  const row = await tx.db
    .insertInto("throttle_counters")
    .values({ subject, window_started_at: now, attempts: 1 })
    .onConflict((oc) =>
      oc.column("subject").doUpdateSet({
        attempts: sql<number>`case when throttle_counters.window_started_at <= ${expiredBefore} then 1 else throttle_counters.attempts + 1 end`,
        window_started_at: sql<string>`case when throttle_counters.window_started_at <= ${expiredBefore} then ${now} else throttle_counters.window_started_at end`,
      }),
    )
    .returning(["attempts", "window_started_at"])
    .executeTakeFirstOrThrow();
  return { subject, attempts: Number(row.attempts), windowStartedAt: row.window_started_at };
}

/** The counters of `subjects` as committed now (a plain read: it may lag, never lead, the atomic count). */
export async function currentCounters(tx: Tx, subjects: string[]): Promise<Reserved[]> {
  const rows = await tx.db
    .selectFrom("throttle_counters")
    .select(["subject", "attempts", "window_started_at"])
    .where("subject", "in", subjects)
    .execute();
  return rows.map((r) => ({ subject: r.subject, attempts: Number(r.attempts), windowStartedAt: r.window_started_at }));
}

/** Gives a reservation back (the attempt succeeded), unless its window has already started again. */
export async function releaseAttempt(tx: Tx, reserved: Reserved): Promise<void> {
  await tx.db
    .updateTable("throttle_counters")
    .set({ attempts: sql<number>`attempts - 1` })
    .where("subject", "=", reserved.subject)
    .where("window_started_at", "=", reserved.windowStartedAt)
    .where("attempts", ">", 0)
    .execute();
}

/** Deletes the counters whose window ended before `before` (they would start again anyway). */
export async function pruneCounters(tx: Tx, before: string, limit: number): Promise<void> {
  const old = tx.db
    .selectFrom("throttle_counters")
    .select("subject")
    .where("window_started_at", "<", before)
    .limit(limit);
  await tx.db.deleteFrom("throttle_counters").where("subject", "in", old).execute();
}
