// Pre-authorized renewals' rules (product §29): each period's window opens just before the schedule makes its invoice and closes when its grace ends, nonces are derived and distinct, the posted terms must be exactly the service's, and the state table.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkRenewalTerms,
  inTokenUnits,
  invoiceDueMs,
  mayMoveRenewal,
  type PeriodTerms,
  RENEWAL_SLACK_MS,
  RENEWAL_STATES,
  type RenewalSchedule,
  renewalNonce,
  renewalWindow,
  startOfPeriod,
} from "../../src/domain/renewalAuthorizations.ts";
import { addIntervals, nextRunMs, nextStep, PLAN_INTERVALS } from "../../src/domain/subscriptions.ts";

const DAY = 86_400_000;
const T0 = Date.UTC(2025, 0, 31, 12);

function terms(fields: Partial<PeriodTerms> = {}): PeriodTerms {
  return {
    planId: "plan",
    interval: "month",
    intervalCount: 1,
    graceDays: 3,
    renewalNoticeDays: 3,
    amountMinor: 10_000_000n,
    ...fields,
  };
}

function schedule(current: PeriodTerms, next: RenewalSchedule["next"] = null): RenewalSchedule {
  return { period: 1, periodStartMs: T0, anchor: { atMs: T0, period: 1 }, current, next };
}

const plans = fc.record({
  interval: fc.constantFrom(...PLAN_INTERVALS),
  intervalCount: fc.integer({ min: 1, max: 3 }),
  graceDays: fc.integer({ min: 0, max: 14 }),
  renewalNoticeDays: fc.integer({ min: 0, max: 14 }),
});

describe("renewal windows", () => {
  it("open just before the schedule makes each period's invoice, and close when its grace ends", () => {
    fc.assert(
      fc.property(plans, fc.integer({ min: 2, max: 14 }), (plan, k) => {
        const s = schedule(terms(plan));
        const start = startOfPeriod(s, k);
        // The schedule of an active subscription in period k − 1 with nothing invoiced ahead.
        const state = {
          status: "active" as const,
          period: k - 1,
          periodStartMs: startOfPeriod(s, k - 1),
          periodEndMs: start,
          paidPeriod: k - 1,
          invoicedPeriod: k - 1,
          cancelAtPeriodEnd: false,
          graceDays: plan.graceDays,
          renewalNoticeDays: plan.renewalNoticeDays,
        };
        const due = nextRunMs(state);
        expect(due).toBe(invoiceDueMs(s, k));
        expect(nextStep(state, due as number)).toEqual({ kind: "invoice", period: k });
        const window = renewalWindow(s, k);
        if (window === null) return;
        expect(window.validAfter).toBe(BigInt(Math.floor(((due as number) - RENEWAL_SLACK_MS) / 1000)));
        expect(window.validBefore).toBe(BigInt(Math.floor((start + plan.graceDays * DAY) / 1000)));
      }),
    );
  });

  it("follows a plan change from its period on, re-anchored at that period's start", () => {
    const s = schedule(terms(), {
      terms: terms({ interval: "week", renewalNoticeDays: 1, graceDays: 2 }),
      fromPeriod: 3,
    });
    const start3 = addIntervals(T0, "month", 2);
    expect(startOfPeriod(s, 3)).toBe(start3);
    expect(startOfPeriod(s, 5)).toBe(start3 + 14 * DAY);
    expect(invoiceDueMs(s, 4)).toBe(start3 + 7 * DAY - DAY);
    expect(renewalWindow(s, 4)?.validBefore).toBe(BigInt((start3 + 9 * DAY) / 1000));
  });

  it("offers no window shorter than an hour (no notice and no grace)", () => {
    expect(renewalWindow(schedule(terms({ renewalNoticeDays: 0, graceDays: 0 })), 2)).toBeNull();
    expect(renewalWindow(schedule(terms({ renewalNoticeDays: 0, graceDays: 1 })), 2)).not.toBeNull();
  });
});

describe("renewal nonces and terms", () => {
  it("derives one 32-byte nonce per subscription, period and payer, whatever the address's case", () => {
    const from = "0xAbCdEf0123456789aBcDeF0123456789AbCdEf01";
    const nonce = renewalNonce("sub-1", 2, from);
    expect(nonce).toMatch(/^0x[0-9a-f]{64}$/);
    expect(renewalNonce("sub-1", 2, from.toLowerCase())).toBe(nonce);
    const others = [
      renewalNonce("sub-1", 3, from),
      renewalNonce("sub-2", 2, from),
      renewalNonce("sub-1", 2, `0x${"1".repeat(40)}`),
    ];
    expect(new Set([nonce, ...others]).size).toBe(4);
  });

  it("converts a plan's amount to the token's units, rounding up", () => {
    expect(inTokenUnits(10_000_000n, 6, 6)).toBe(10_000_000n);
    expect(inTokenUnits(10_000_000n, 6, 18)).toBe(10_000_000_000_000_000_000n);
    expect(inTokenUnits(1_000_000_000_000_000_001n, 18, 6)).toBe(1_000_001n);
  });

  it("refuses posted terms that are not exactly the service's, each with its code", () => {
    const expected = { period: 2, nonce: renewalNonce("s", 2, "0x01"), value: 5n, validAfter: 10n, validBefore: 20n };
    const { period: _p, ...same } = expected;
    expect(checkRenewalTerms(expected, same).ok).toBe(true);
    expect(checkRenewalTerms(expected, { ...same, nonce: same.nonce.toUpperCase().replace("0X", "0x") }).ok).toBe(true);
    const code = (posted: typeof same) => {
      const checked = checkRenewalTerms(expected, posted);
      return checked.ok ? null : checked.error;
    };
    expect(code({ ...same, nonce: renewalNonce("s", 3, "0x01") })).toBe("authorization_nonce_invalid");
    expect(code({ ...same, value: 4n })).toBe("authorization_value");
    expect(code({ ...same, validAfter: 9n })).toBe("authorization_window");
    expect(code({ ...same, validBefore: 21n })).toBe("authorization_window");
  });

  it("moves a renewal only forward: superseded and revoked are final", () => {
    expect(mayMoveRenewal("signed", "submitted")).toBe(true);
    expect(mayMoveRenewal("submitted", "revoked")).toBe(true);
    for (const to of RENEWAL_STATES) {
      expect(mayMoveRenewal("superseded", to)).toBe(false);
      expect(mayMoveRenewal("revoked", to)).toBe(false);
      expect(mayMoveRenewal(to, "signed")).toBe(false);
    }
  });
});
