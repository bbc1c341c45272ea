// Subscriptions (product §29) as pure rules: plan limits, calendar periods, the status table, and what the schedule does next.
import { err, ok, type Result } from "./result.ts";
import { transition } from "./stateTable.ts";

export const PLAN_INTERVALS = ["day", "week", "month", "year"] as const;
export type PlanInterval = (typeof PLAN_INTERVALS)[number];

/** A period is at most a year: the bound of intervalCount per interval. */
export const MAX_INTERVAL_COUNT: Record<PlanInterval, number> = { day: 366, week: 52, month: 12, year: 1 };
export const MAX_TRIAL_DAYS = 730;
/**
 * Notice and grace together stay within an invoice's 30-day lifetime (§5): a renewal invoice lives
 * from its notice until the grace ends, so it never expires before the schedule says unpaid.
 */
export const MAX_RENEWAL_NOTICE_DAYS = 14;
export const MAX_GRACE_DAYS = 14;
export const DEFAULT_RENEWAL_NOTICE_DAYS = 3;
export const DEFAULT_GRACE_DAYS = 3;

export interface PlanTerms {
  interval: PlanInterval;
  intervalCount: number;
  trialDays: number;
  graceDays: number;
  renewalNoticeDays: number;
}

export type PlanTermsError = "plan_interval_invalid" | "plan_days_invalid";

export function isPlanInterval(value: string): value is PlanInterval {
  return (PLAN_INTERVALS as readonly string[]).includes(value);
}

/** Checks a plan's schedule fields; the JSON schema has checked their types. */
export function checkPlanTerms(terms: PlanTerms): Result<PlanTerms, PlanTermsError> {
  const max = MAX_INTERVAL_COUNT[terms.interval];
  if (!Number.isInteger(terms.intervalCount) || terms.intervalCount < 1 || terms.intervalCount > max) {
    return err("plan_interval_invalid", `intervalCount of a ${terms.interval} plan is a whole number from 1 to ${max}`);
  }
  const bounds: [keyof PlanTerms, number][] = [
    ["trialDays", MAX_TRIAL_DAYS],
    ["graceDays", MAX_GRACE_DAYS],
    ["renewalNoticeDays", MAX_RENEWAL_NOTICE_DAYS],
  ];
  for (const [field, limit] of bounds) {
    const value = terms[field] as number;
    if (!Number.isInteger(value) || value < 0 || value > limit) {
      return err("plan_days_invalid", `${field} is a whole number of days from 0 to ${limit}`);
    }
  }
  // A renewal invoice is open from its notice to its grace's end: with neither, a payer could never pay it.
  if (terms.renewalNoticeDays + terms.graceDays < 1) {
    return err("plan_days_invalid", "renewalNoticeDays and graceDays together are at least one day");
  }
  return ok(terms);
}

const DAY_MS = 86_400_000;

function daysInMonth(year: number, monthIndex: number): number {
  return new Date(Date.UTC(year, monthIndex + 1, 0)).getUTCDate();
}

/**
 * `at` plus `count` intervals, in UTC. Calendar months are calendar months: the day of the month
 * is kept, or the month's last day when it has fewer (31 January + 1 month = 28 or 29 February).
 */
export function addIntervals(atMs: number, interval: PlanInterval, count: number): number {
  if (interval === "day") return atMs + count * DAY_MS;
  if (interval === "week") return atMs + count * 7 * DAY_MS;
  const months = interval === "year" ? count * 12 : count;
  const at = new Date(atMs);
  const total = at.getUTCMonth() + months;
  const year = at.getUTCFullYear() + Math.floor(total / 12);
  const month = ((total % 12) + 12) % 12;
  const day = Math.min(at.getUTCDate(), daysInMonth(year, month));
  return Date.UTC(year, month, day) + (atMs - Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
}

/** The start of period `k` of a schedule anchored at period `anchorPeriod` (counting from the anchor, never drifting). */
export function periodStartMs(
  anchor: { atMs: number; period: number },
  terms: Pick<PlanTerms, "interval" | "intervalCount">,
  k: number,
): number {
  return addIntervals(anchor.atMs, terms.interval, terms.intervalCount * (k - anchor.period));
}

export const SUBSCRIPTION_STATUSES = ["incomplete", "trialing", "active", "past_due", "unpaid", "canceled"] as const;
export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export function isSubscriptionStatus(value: string): value is SubscriptionStatus {
  return (SUBSCRIPTION_STATUSES as readonly string[]).includes(value);
}

export type SubscriptionCause =
  /** The invoice of the current period was paid. */
  | "paid"
  /** A period started that was paid ahead. */
  | "period_started_paid"
  /** A period started that was not paid. */
  | "period_started_unpaid"
  /** The grace of the current period's invoice ended unpaid. */
  | "grace_ended"
  /** The merchant cancelled now, or the period of a cancellation at its end ended. */
  | "canceled";

export interface SubscriptionTransition {
  readonly from: SubscriptionStatus;
  readonly to: SubscriptionStatus;
  readonly cause: SubscriptionCause;
}

/** Product §29 row by row; anything absent is refused. */
export const SUBSCRIPTION_TRANSITIONS: readonly SubscriptionTransition[] = [
  { from: "incomplete", to: "active", cause: "paid" },
  { from: "incomplete", to: "unpaid", cause: "grace_ended" },
  { from: "trialing", to: "active", cause: "period_started_paid" },
  { from: "trialing", to: "past_due", cause: "period_started_unpaid" },
  { from: "active", to: "active", cause: "period_started_paid" },
  { from: "active", to: "past_due", cause: "period_started_unpaid" },
  { from: "past_due", to: "active", cause: "paid" },
  { from: "past_due", to: "unpaid", cause: "grace_ended" },
  ...(["incomplete", "trialing", "active", "past_due", "unpaid"] as const).map((from) => ({
    from,
    to: "canceled" as const,
    cause: "canceled" as const,
  })),
];

/** Whether the table allows (from, to) for this cause. */
export function allowsSubscriptionTransition(
  from: SubscriptionStatus,
  to: SubscriptionStatus,
  cause: SubscriptionCause,
): boolean {
  return transition(SUBSCRIPTION_TRANSITIONS, from, to)?.cause === cause;
}

/** What the schedule reads of a subscription. Times in epoch milliseconds. */
export interface ScheduleState {
  status: SubscriptionStatus;
  period: number;
  periodStartMs: number;
  periodEndMs: number;
  /** The highest period paid (0: none). */
  paidPeriod: number;
  /** The highest period with an invoice (0: none). */
  invoicedPeriod: number;
  cancelAtPeriodEnd: boolean;
  /** Of the plan the current period's invoice was made under (its grace) and the next one's (notice). */
  graceDays: number;
  renewalNoticeDays: number;
}

export type ScheduleStep =
  /** Make the invoice of period `period` (the next one). */
  | { kind: "invoice"; period: number }
  /** The current period ended: the next one starts, paid or not. */
  | { kind: "start_period"; paid: boolean }
  /** The unpaid invoice's grace ended. */
  | { kind: "unpaid" }
  /** The period of a cancellation at its end ended. */
  | { kind: "cancel" };

function renewalInvoiceDueMs(s: ScheduleState): number | null {
  if (s.cancelAtPeriodEnd || s.invoicedPeriod > s.period) return null;
  return Math.max(s.periodStartMs, s.periodEndMs - s.renewalNoticeDays * DAY_MS);
}

/** When the schedule next has a step to take (null: never, the subscription is over). */
export function nextRunMs(s: ScheduleState): number | null {
  switch (s.status) {
    case "canceled":
    case "unpaid":
      return null;
    case "incomplete":
    case "past_due": {
      // An incomplete subscription's first invoice is made at once.
      if (s.invoicedPeriod < s.period) return s.periodStartMs;
      const graceEnd = graceEndMs(s.periodStartMs, s.graceDays, s.status === "incomplete");
      return s.cancelAtPeriodEnd ? Math.min(graceEnd, s.periodEndMs) : graceEnd;
    }
    case "trialing":
    case "active": {
      const invoiceDue = renewalInvoiceDueMs(s);
      return invoiceDue === null ? s.periodEndMs : Math.min(invoiceDue, s.periodEndMs);
    }
  }
}

/**
 * The one step due at `nowMs`, or null. Steps are taken one at a time, each in its own
 * transaction under the subscription's row lock, so any number of workers (or a test clock's
 * advance) racing over one subscription take each step once.
 */
export function nextStep(s: ScheduleState, nowMs: number): ScheduleStep | null {
  const runMs = nextRunMs(s);
  if (runMs === null || nowMs < runMs) return null;
  if (s.status === "incomplete" || s.status === "past_due") {
    if (s.invoicedPeriod < s.period) return { kind: "invoice", period: s.period };
    if (s.cancelAtPeriodEnd && nowMs >= s.periodEndMs) return { kind: "cancel" };
    return { kind: "unpaid" };
  }
  // The renewal invoice comes first: with no notice it falls due at the period's end, before the next starts.
  const invoiceDue = renewalInvoiceDueMs(s);
  if (invoiceDue !== null && nowMs >= invoiceDue) return { kind: "invoice", period: s.period + 1 };
  const paid = s.paidPeriod > s.period;
  if (s.cancelAtPeriodEnd && !paid) return { kind: "cancel" };
  return { kind: "start_period", paid };
}

/** The status after a period starts. */
export function statusOfStartedPeriod(paid: boolean): SubscriptionStatus {
  return paid ? "active" : "past_due";
}

/** A first invoice (made at the subscription's start, nothing noticed ahead) stays open at least this long. */
export const FIRST_INVOICE_MIN_GRACE_DAYS = 1;

/** The grace deadline of an invoice for a period starting at `periodStartMs`; a first invoice's is at least a day. */
export function graceEndMs(periodStartMs: number, graceDays: number, first = false): number {
  return periodStartMs + (first ? Math.max(graceDays, FIRST_INVOICE_MIN_GRACE_DAYS) : graceDays) * DAY_MS;
}

export function daysMs(days: number): number {
  return days * DAY_MS;
}

/** The invoice a subscription waits to be paid, as the subscription shows it. */
export interface OpenInvoiceObject {
  id: string;
  url: string;
  status: string;
  amount: string;
  currency: string;
  period: number;
  periodStart: string;
  periodEnd: string;
}

/** The public object of a subscription (product §29). */
export interface SubscriptionObject {
  id: string;
  url: string;
  planId: string;
  nextPlanId: string | null;
  customer: { reference: string; email: string | null };
  callbackUrl: string | null;
  status: SubscriptionStatus;
  period: number;
  currentPeriodStart: string;
  currentPeriodEnd: string;
  trialEnd: string | null;
  cancelAtPeriodEnd: boolean;
  canceledAt: string | null;
  openInvoice: OpenInvoiceObject | null;
  /** The sandbox test clock's time once advanced; null: real time. */
  testClock: string | null;
  createdAt: string;
  updatedAt: string;
}

export const SUBSCRIPTION_EVENT_TYPES = [
  "subscription.invoice_created",
  "subscription.renewed",
  "subscription.past_due",
  "subscription.unpaid",
  "subscription.canceled",
] as const;
export type SubscriptionEventType = (typeof SUBSCRIPTION_EVENT_TYPES)[number];
