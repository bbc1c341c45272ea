// Payout policies (product §31): the decision as a pure function, the rolling sum under any sequence of payouts, and how a change tightens at once and loosens later.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  approvalOutcome,
  changePolicy,
  decidePayout,
  limitsAt,
  type PayoutLimits,
} from "../../src/domain/payoutPolicy.ts";

const NOW = "2026-03-01T12:00:00.000Z";
const HOUR = 3_600_000;
const limits = (perPayoutLimit: bigint | null, dailyLimit: bigint | null, approvalsRequired = 2): PayoutLimits => ({
  perPayoutLimit,
  dailyLimit,
  approvalsRequired,
});

describe("decidePayout", () => {
  it("waits over either limit, and never with zero approvals", () => {
    expect(decidePayout(limits(100n, null), 100n, 0n)).toEqual({ kind: "send" });
    expect(decidePayout(limits(100n, null), 101n, 0n)).toEqual({
      kind: "await_approval",
      approvalsRequired: 2,
      reason: "per_payout_limit",
    });
    expect(decidePayout(limits(null, 500n), 100n, 400n)).toEqual({ kind: "send" });
    expect(decidePayout(limits(null, 500n), 100n, 401n)).toMatchObject({ reason: "daily_limit" });
    expect(decidePayout(limits(1n, 1n, 0), 10n ** 30n, 10n ** 30n)).toEqual({ kind: "send" });
  });

  it("never lets what is sent without approval exceed the daily limit, whatever the payouts", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        fc.array(fc.bigInt({ min: 1n, max: 10n ** 12n }), { maxLength: 60 }),
        (daily, amounts) => {
          let sent = 0n;
          for (const amount of amounts) {
            if (decidePayout(limits(null, daily), amount, sent).kind === "send") sent += amount;
          }
          expect(sent <= daily).toBe(true);
        },
      ),
    );
  });
});

describe("changePolicy", () => {
  it("applies a tightening at once and holds a loosening until the cooling-off ends", () => {
    const start = changePolicy(null, limits(100n, 1000n), NOW, HOUR);
    expect(start).toEqual({ ...limits(100n, 1000n), pending: null });
    const tighter = changePolicy(start, limits(50n, 1000n, 3), NOW, HOUR);
    expect(tighter).toEqual({ ...limits(50n, 1000n, 3), pending: null });
    const mixed = changePolicy(tighter, limits(500n, 10n, 1), NOW, HOUR);
    // The daily limit tightens now; the per-payout limit and the approvals wait.
    expect(limitsAt(mixed, NOW)).toEqual(limits(50n, 10n, 3));
    expect(limitsAt(mixed, "2026-03-01T12:59:59.999Z")).toEqual(limits(50n, 10n, 3));
    expect(limitsAt(mixed, "2026-03-01T13:00:00.000Z")).toEqual(limits(500n, 10n, 1));
    expect(changePolicy(tighter, limits(null, null, 0), NOW, 0)).toEqual({ ...limits(null, null, 0), pending: null });
  });

  it("never loosens before the cooling-off, whatever the change", () => {
    const limit = fc.option(fc.bigInt({ min: 1n, max: 1000n }), { nil: null });
    const policy = fc.tuple(limit, limit, fc.integer({ min: 0, max: 3 })).map(([a, b, n]) => limits(a, b, n));
    fc.assert(
      fc.property(policy, policy, (before, after) => {
        const current = changePolicy(null, before, NOW, HOUR);
        const now = limitsAt(changePolicy(current, after, NOW, HOUR), NOW);
        for (const paid of [0n, 500n]) {
          for (const amount of [1n, 100n, 999n, 2000n]) {
            // Whatever waits under the old limits and under the new ones waits now.
            const waitsBoth =
              decidePayout(before, amount, paid).kind === "await_approval" &&
              decidePayout(after, amount, paid).kind === "await_approval";
            if (waitsBoth) expect(decidePayout(now, amount, paid).kind).toBe("await_approval");
          }
        }
      }),
    );
  });
});

describe("approvalOutcome", () => {
  it("is approved at the count, rejected at any rejection", () => {
    expect(approvalOutcome(2, ["approve"])).toBe("pending");
    expect(approvalOutcome(2, ["approve", "approve"])).toBe("approved");
    expect(approvalOutcome(3, ["approve", "reject"])).toBe("rejected");
  });
});
