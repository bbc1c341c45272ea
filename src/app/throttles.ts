// Throttles counted before they are evaluated (product §18): reserve an attempt per subject, evaluate only within the limits.
import { pruneUnattributedSigninFailures } from "../store/dashboard.ts";
import type { Store, Tx } from "../store/store.ts";
import { currentCounters, pruneCounters, type Reserved, releaseAttempt, reserveAttempt } from "../store/throttles.ts";

/** One limit: at most `limit` attempts of `subject` (e.g. `signin:account:<email>`) per window. */
export interface ThrottleRule {
  subject: string;
  limit: number;
  windowMs: number;
}

export type Reservation = { ok: true; reserved: Reserved[] } | { ok: false; retryAfterSeconds: number };

/** Every this many reservations a process deletes counters whose window ended long ago. */
const PRUNE_EVERY = 256;
const PRUNE_AFTER_MS = 3_600_000;
/** Failed sign-ins without an account are kept this long. */
const UNATTRIBUTED_KEPT_MS = 30 * 86_400_000;
const PRUNE_BATCH = 1000;
let sincePrune = 0;

class OverLimit {
  constructor(readonly retryAfterSeconds: number) {}
}

/**
 * Reserves one attempt under every rule, in one transaction, before anything is evaluated. When one
 * subject is over its limit nothing is kept (the transaction rolls back): the attempt is refused
 * unevaluated and does not spend the other subjects' budgets.
 */
export async function reserve(store: Store, rules: ThrottleRule[], nowMs = Date.now()): Promise<Reservation> {
  const active = rules.filter((r) => r.limit > 0);
  if (active.length === 0) return { ok: true, reserved: [] };
  maybePrune(store, nowMs);
  // A subject already over its limit is refused by a plain read: a flood of refused attempts takes
  // no row lock and writes nothing. The count read can only lag the atomic one, so an attempt that
  // passes here is decided by the reservation below.
  const over = overLimit(
    active,
    await currentCounters(
      store,
      active.map((r) => r.subject),
    ),
    nowMs,
  );
  if (over !== null) return { ok: false, retryAfterSeconds: over };
  try {
    const reserved = await store.transaction(async (tx) => {
      const made: Reserved[] = [];
      for (const rule of active) {
        const r = await reserveAttempt(tx, rule.subject, rule.windowMs, nowMs);
        if (r.attempts > rule.limit) throw new OverLimit(retryAfter(rule, r, nowMs));
        made.push(r);
      }
      return made;
    });
    return { ok: true, reserved };
  } catch (error) {
    if (error instanceof OverLimit) return { ok: false, retryAfterSeconds: error.retryAfterSeconds };
    throw error;
  }
}

function retryAfter(rule: ThrottleRule, counter: Reserved, nowMs: number): number {
  const endsMs = Date.parse(counter.windowStartedAt) + rule.windowMs;
  return Math.max(1, Math.ceil((endsMs - nowMs) / 1000));
}

/** Seconds until the first window that is full ends, or null when every subject may take one more attempt. */
function overLimit(rules: ThrottleRule[], counters: Reserved[], nowMs: number): number | null {
  for (const rule of rules) {
    const counter = counters.find((c) => c.subject === rule.subject);
    if (!counter || Date.parse(counter.windowStartedAt) + rule.windowMs <= nowMs) continue;
    if (counter.attempts >= rule.limit) return retryAfter(rule, counter, nowMs);
  }
  return null;
}

/** The attempts succeeded: their reservations are given back (inside the caller's transaction). */
export async function release(tx: Tx, reservation: Reservation): Promise<void> {
  if (!reservation.ok) return;
  for (const r of reservation.reserved) await releaseAttempt(tx, r);
}

function maybePrune(store: Store, nowMs: number): void {
  sincePrune += 1;
  if (sincePrune < PRUNE_EVERY) return;
  sincePrune = 0;
  const before = new Date(nowMs - PRUNE_AFTER_MS).toISOString();
  const unattributedBefore = new Date(nowMs - UNATTRIBUTED_KEPT_MS).toISOString();
  // Off the request's path: a failed prune leaves rows the next one deletes.
  store
    .transaction(async (tx) => {
      await pruneCounters(tx, before, PRUNE_BATCH);
      await pruneUnattributedSigninFailures(tx, unattributedBefore, PRUNE_BATCH);
    })
    .catch(() => undefined);
}
