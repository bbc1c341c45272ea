// The test hooks a test process asks for (never in production): the composition root reads them from its environment once and hands them to the workers, which pass each to the chain code it concerns.
import {
  type CrashPoint,
  FLUSH_CRASH_POINTS,
  PAYOUT_CRASH_POINTS,
  SWEEP_CRASH_POINTS,
  type SweepCrashPoint,
} from "../chain/crashPoints.ts";
import type { ScanHooks } from "../chain/scanner.ts";

export interface TestHooks {
  /** Where a payout kills the process (PAYOUT_TEST_CRASH_AT). */
  readonly payoutCrashAt: CrashPoint | null;
  /** Where a sweep kills the process (SWEEP_TEST_CRASH_AT). */
  readonly sweepCrashAt: SweepCrashPoint | null;
  /** Where a flush kills the process (FLUSH_TEST_CRASH_AT). */
  readonly flushCrashAt: CrashPoint | null;
  /** SCANNER_TEST_PAUSE_AT=before_record: the process stops (SIGSTOP) the first time a batch is about to record transfers, so a test can hold it past its lease. */
  readonly scan: ScanHooks;
}

/** A process no test asked anything of: every production process, and the tests that drive workers in-process. */
export const NO_TEST_HOOKS: TestHooks = { payoutCrashAt: null, sweepCrashAt: null, flushCrashAt: null, scan: {} };

/** The hooks `env` asks for (the composition root passes its process's environment); unknown values ask for none. */
export function testHooksOf(env: Readonly<Record<string, string | undefined>>): TestHooks {
  let pause = env.SCANNER_TEST_PAUSE_AT === "before_record";
  const beforeRecord = () => {
    if (!pause) return;
    pause = false;
    process.kill(process.pid, "SIGSTOP");
  };
  return {
    payoutCrashAt: PAYOUT_CRASH_POINTS.find((p) => p === env.PAYOUT_TEST_CRASH_AT) ?? null,
    sweepCrashAt: SWEEP_CRASH_POINTS.find((p) => p === env.SWEEP_TEST_CRASH_AT) ?? null,
    flushCrashAt: FLUSH_CRASH_POINTS.find((p) => p === env.FLUSH_TEST_CRASH_AT) ?? null,
    scan: { beforeRecord },
  };
}
