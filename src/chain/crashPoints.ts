// The named points where a test process kills itself (SIGKILL) to prove a hot-wallet transaction crash-safe; the composition root reads the one a test asks for, never production code.

/**
 * A transaction of the outbox (a payout's, a flush's): `after_sign` (the signed transaction is committed, not broadcast), `after_broadcast`
 * (the node took it, the database does not know yet). Asked for in PAYOUT_TEST_CRASH_AT.
 */
export type CrashPoint = "after_sign" | "after_broadcast";
export const PAYOUT_CRASH_POINTS: readonly CrashPoint[] = ["after_sign", "after_broadcast"];

/**
 * A sweep: a funding or sweep transaction committed and not broadcast (`*_sign`), or broadcast and
 * its answer not recorded (`*_broadcast`). Asked for in SWEEP_TEST_CRASH_AT.
 */
export type SweepCrashPoint =
  | "after_funding_sign"
  | "after_funding_broadcast"
  | "after_sweep_sign"
  | "after_sweep_broadcast";

export const SWEEP_CRASH_POINTS: readonly SweepCrashPoint[] = [
  "after_funding_sign",
  "after_funding_broadcast",
  "after_sweep_sign",
  "after_sweep_broadcast",
];

/**
 * A flush: the outbox's points (its transaction committed and not broadcast, or broadcast and the
 * database not told yet). Asked for in FLUSH_TEST_CRASH_AT.
 */
export const FLUSH_CRASH_POINTS: readonly CrashPoint[] = ["after_sign", "after_broadcast"];
