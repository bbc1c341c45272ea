// Subscription rules (product §29): calendar periods, the status table, and the schedule's next step, with properties over random schedules.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  addIntervals,
  allowsSubscriptionTransition,
  checkPlanTerms,
  nextRunMs,
  nextStep,
  PLAN_INTERVALS,
  periodStartMs,
  type ScheduleState,
  SUBSCRIPTION_STATUSES,
  SUBSCRIPTION_TRANSITIONS,
} from "../../src/domain/subscriptions.ts";

const DAY = 86_400_000;
const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe("calendar periods", () => {
  it("keeps the day of the month, or the month's last day when it has fewer", () => {
    expect(iso(addIntervals(at("2027-01-31T10:00:00.000Z"), "month", 1))).toBe("2027-02-28T10:00:00.000Z");
    expect(iso(addIntervals(at("2028-01-31T10:00:00.000Z"), "month", 1))).toBe("2028-02-29T10:00:00.000Z");
    expect(iso(addIntervals(at("2027-01-31T10:00:00.000Z"), "month", 2))).toBe("2027-03-31T10:00:00.000Z");
    expect(iso(addIntervals(at("2027-12-15T00:00:00.000Z"), "month", 1))).toBe("2028-01-15T00:00:00.000Z");
    expect(iso(addIntervals(at("2028-02-29T00:00:00.000Z"), "year", 1))).toBe("2029-02-28T00:00:00.000Z");
    expect(addIntervals(0, "week", 2)).toBe(14 * DAY);
    expect(addIntervals(0, "day", 3)).toBe(3 * DAY);
  });

  it("counts every period from the anchor, so a short month never shortens the later ones", () => {
    const anchor = { atMs: at("2027-01-31T00:00:00.000Z"), period: 1 };
    const starts = [1, 2, 3, 4].map((k) => iso(periodStartMs(anchor, { interval: "month", intervalCount: 1 }, k)));
    expect(starts).toEqual([
      "2027-01-31T00:00:00.000Z",
      "2027-02-28T00:00:00.000Z",
      "2027-03-31T00:00:00.000Z",
      "2027-04-30T00:00:00.000Z",
    ]);
  });

  it("has periods that strictly increase and last between 28 days and a year for monthly and yearly plans", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: at("2000-01-01T00:00:00Z"), max: at("2100-01-01T00:00:00Z") }),
        fc.constantFrom(...PLAN_INTERVALS),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 40 }),
        (anchorMs, interval, count, k) => {
          const terms = { interval, intervalCount: interval === "year" ? 1 : count };
          const start = periodStartMs({ atMs: anchorMs, period: 1 }, terms, k);
          const end = periodStartMs({ atMs: anchorMs, period: 1 }, terms, k + 1);
          expect(end).toBeGreaterThan(start);
          if (interval === "month") expect(end - start).toBeGreaterThanOrEqual(28 * DAY * terms.intervalCount - DAY);
          if (interval === "year") expect(end - start).toBeGreaterThanOrEqual(365 * DAY);
        },
      ),
    );
  });
});

describe("plan terms", () => {
  it("bounds the interval count per interval and the days", () => {
    const base = { interval: "month" as const, intervalCount: 1, trialDays: 0, graceDays: 3, renewalNoticeDays: 3 };
    expect(checkPlanTerms(base).ok).toBe(true);
    expect(checkPlanTerms({ ...base, intervalCount: 13 })).toMatchObject({ ok: false, error: "plan_interval_invalid" });
    expect(checkPlanTerms({ ...base, interval: "year", intervalCount: 2 })).toMatchObject({ ok: false });
    expect(checkPlanTerms({ ...base, graceDays: 15 })).toMatchObject({ ok: false, error: "plan_days_invalid" });
    expect(checkPlanTerms({ ...base, trialDays: -1 })).toMatchObject({ ok: false, error: "plan_days_invalid" });
    // A renewal invoice open for no time at all: neither notice nor grace.
    expect(checkPlanTerms({ ...base, graceDays: 0, renewalNoticeDays: 0 })).toMatchObject({ ok: false });
    expect(checkPlanTerms({ ...base, graceDays: 0, renewalNoticeDays: 1 }).ok).toBe(true);
  });
});

describe("the status table", () => {
  it("is product §29's, and nothing leaves canceled", () => {
    for (const from of SUBSCRIPTION_STATUSES) {
      for (const to of SUBSCRIPTION_STATUSES) {
        const row = SUBSCRIPTION_TRANSITIONS.filter((t) => t.from === from && t.to === to);
        expect(row.length, `${from} → ${to}`).toBeLessThanOrEqual(1);
      }
    }
    expect(SUBSCRIPTION_TRANSITIONS.some((t) => t.from === "canceled")).toBe(false);
    expect(allowsSubscriptionTransition("past_due", "active", "paid")).toBe(true);
    expect(allowsSubscriptionTransition("unpaid", "active", "paid")).toBe(false);
    expect(allowsSubscriptionTransition("trialing", "past_due", "period_started_unpaid")).toBe(true);
    expect(allowsSubscriptionTransition("active", "unpaid", "grace_ended")).toBe(false);
  });
});

const base: ScheduleState = {
  status: "active",
  period: 1,
  periodStartMs: 0,
  periodEndMs: 30 * DAY,
  paidPeriod: 1,
  invoicedPeriod: 1,
  cancelAtPeriodEnd: false,
  graceDays: 3,
  renewalNoticeDays: 3,
};

describe("the schedule's next step", () => {
  it("makes the renewal invoice at the notice, starts the period at its end, and ends the grace", () => {
    expect(nextStep(base, 26 * DAY)).toBeNull();
    expect(nextRunMs(base)).toBe(27 * DAY);
    expect(nextStep(base, 27 * DAY)).toEqual({ kind: "invoice", period: 2 });
    const invoiced = { ...base, invoicedPeriod: 2 };
    expect(nextStep(invoiced, 29 * DAY)).toBeNull();
    expect(nextStep(invoiced, 30 * DAY)).toEqual({ kind: "start_period", paid: false });
    expect(nextStep({ ...invoiced, paidPeriod: 2 }, 30 * DAY)).toEqual({ kind: "start_period", paid: true });
    const pastDue = {
      ...invoiced,
      status: "past_due" as const,
      period: 2,
      periodStartMs: 30 * DAY,
      periodEndMs: 60 * DAY,
    };
    expect(nextRunMs(pastDue)).toBe(33 * DAY);
    expect(nextStep(pastDue, 33 * DAY)).toEqual({ kind: "unpaid" });
    expect(nextStep({ ...invoiced, cancelAtPeriodEnd: true }, 30 * DAY)).toEqual({ kind: "cancel" });
    // An incomplete subscription's first invoice stays open at least a day, even with no grace.
    const first = { ...base, status: "incomplete" as const, paidPeriod: 0, graceDays: 0 };
    expect(nextRunMs(first)).toBe(DAY);
    expect(nextRunMs({ ...base, status: "unpaid" })).toBeNull();
    expect(nextRunMs({ ...base, status: "canceled" })).toBeNull();
  });

  it("with no notice, invoices at the period's end before the next period starts", () => {
    const noNotice = { ...base, renewalNoticeDays: 0 };
    expect(nextStep(noNotice, 30 * DAY)).toEqual({ kind: "invoice", period: 2 });
  });

  it("never has a step before the time it says it runs, and always has one then", () => {
    const state = fc.record({
      status: fc.constantFrom(...SUBSCRIPTION_STATUSES),
      period: fc.integer({ min: 0, max: 5 }),
      periodStartMs: fc.constant(0),
      periodEndMs: fc.integer({ min: 1, max: 400 }).map((d) => d * DAY),
      paidPeriod: fc.integer({ min: 0, max: 6 }),
      invoicedPeriod: fc.integer({ min: 0, max: 6 }),
      cancelAtPeriodEnd: fc.boolean(),
      graceDays: fc.integer({ min: 0, max: 14 }),
      renewalNoticeDays: fc.integer({ min: 0, max: 14 }),
    });
    fc.assert(
      fc.property(state, fc.integer({ min: 0, max: 500 * DAY }), (s, nowMs) => {
        const runMs = nextRunMs(s);
        const step = nextStep(s, nowMs);
        if (runMs === null || nowMs < runMs) expect(step).toBeNull();
        else expect(step).not.toBeNull();
      }),
    );
  });
});
