// Plans and subscriptions (product §29): rows, their public objects, the schedule's reads and writes, and the renewal a paid period's invoice makes.
import { invoiceUrl } from "../domain/invoices.ts";
import { formatAmount } from "../domain/money.ts";
import { assert } from "../domain/result.ts";
import {
  allowsSubscriptionTransition,
  isPlanInterval,
  isSubscriptionStatus,
  nextRunMs,
  type PlanInterval,
  type ScheduleState,
  type SubscriptionCause,
  type SubscriptionEventType,
  type SubscriptionObject,
  type SubscriptionStatus,
} from "../domain/subscriptions.ts";
import { recordSubscriptionEvent } from "./events.ts";
import type { PlansTable, SubscriptionsTable } from "./schema.ts";
import type { Tx } from "./store.ts";

/** The idempotency key of a period's invoice is `subscription:{id}:{period}` (the schedule makes it). */
export const SUBSCRIPTION_KEY_PREFIX = "subscription:";

export function periodInvoiceKey(subscriptionId: string, period: number): string {
  return `${SUBSCRIPTION_KEY_PREFIX}${subscriptionId}:${period}`;
}

/** The public object of a plan (product §29): `amount` a plain decimal of its currency. */
export interface PlanObject {
  id: string;
  name: string;
  currency: string;
  amount: string;
  interval: PlanInterval;
  intervalCount: number;
  trialDays: number;
  graceDays: number;
  renewalNoticeDays: number;
  active: boolean;
  createdAt: string;
  updatedAt: string;
}

export function planObject(row: PlansTable, decimals: number): PlanObject {
  assert(isPlanInterval(row.interval), `plan ${row.id} has a known interval`);
  return {
    id: row.id,
    name: row.name,
    currency: row.currency,
    amount: formatAmount(BigInt(row.amount), decimals),
    interval: row.interval,
    intervalCount: row.interval_count,
    trialDays: row.trial_days,
    graceDays: row.grace_days,
    renewalNoticeDays: row.renewal_notice_days,
    active: Number(row.active) === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function findPlanRow(tx: Tx, id: string, merchantId?: string): Promise<PlansTable | null> {
  const row = await tx.db
    .selectFrom("plans")
    .selectAll()
    .where("id", "=", id)
    .$if(merchantId !== undefined, (qb) => qb.where("merchant_id", "=", merchantId as string))
    .executeTakeFirst();
  return row ?? null;
}

/** The subscription's row under its lock (PostgreSQL; SQLite serializes writers): the schedule's and payments' one order. */
export async function lockSubscription(tx: Tx, id: string, merchantId?: string): Promise<SubscriptionsTable | null> {
  const row = await tx.db
    .selectFrom("subscriptions")
    .selectAll()
    .where("id", "=", id)
    .$if(merchantId !== undefined, (qb) => qb.where("merchant_id", "=", merchantId as string))
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  return row ?? null;
}

export function subscriptionStatusOf(row: SubscriptionsTable): SubscriptionStatus {
  assert(isSubscriptionStatus(row.status), `subscription ${row.id} has a known status`);
  return row.status;
}

/** The plan the invoice of period `k` is made under: the next plan from its period on. */
export function planIdForPeriod(row: SubscriptionsTable, k: number): string {
  return row.next_plan_id !== null && row.next_plan_period !== null && k >= row.next_plan_period
    ? row.next_plan_id
    : row.plan_id;
}

/** What the schedule reads of a subscription: its row, with the grace of its current plan and the notice of the next period's. */
export function scheduleState(row: SubscriptionsTable, current: PlansTable, next: PlansTable): ScheduleState {
  return {
    status: subscriptionStatusOf(row),
    period: row.period,
    periodStartMs: Date.parse(row.current_period_start),
    periodEndMs: Date.parse(row.current_period_end),
    paidPeriod: row.paid_period,
    invoicedPeriod: row.invoiced_period,
    cancelAtPeriodEnd: Number(row.cancel_at_period_end) === 1,
    graceDays: current.grace_days,
    renewalNoticeDays: next.renewal_notice_days,
  };
}

/** The plans the schedule of `row` needs now: the current period's and the next period's. */
export async function schedulePlans(tx: Tx, row: SubscriptionsTable) {
  const current = await findPlanRow(tx, row.plan_id);
  assert(current !== null, `subscription ${row.id} has its plan`);
  const nextId = planIdForPeriod(row, row.period + 1);
  const next = nextId === current.id ? current : await findPlanRow(tx, nextId);
  assert(next !== null, `subscription ${row.id} has its next plan`);
  return { current, next };
}

/** When the schedule of `row` (as it will be written) next has work: the worker's index. */
export async function runAtOf(tx: Tx, row: SubscriptionsTable): Promise<string | null> {
  const { current, next } = await schedulePlans(tx, row);
  const ms = nextRunMs(scheduleState(row, current, next));
  return ms === null ? null : new Date(ms).toISOString();
}

/** Writes the subscription's new state with its recomputed run_at, and answers the row as written. */
export async function saveSubscription(
  tx: Tx,
  row: SubscriptionsTable,
  changes: Partial<SubscriptionsTable>,
  now: string,
): Promise<SubscriptionsTable> {
  const changed: SubscriptionsTable = { ...row, ...changes, updated_at: now };
  changed.run_at = await runAtOf(tx, changed);
  const { id: _id, ...rest } = changed;
  await tx.db.updateTable("subscriptions").set(rest).where("id", "=", row.id).execute();
  return changed;
}

/** A status change of the subscription table, or a thrown invariant when the table refuses it. */
export function assertSubscriptionTransition(
  row: SubscriptionsTable,
  to: SubscriptionStatus,
  cause: SubscriptionCause,
) {
  const from = subscriptionStatusOf(row);
  assert(allowsSubscriptionTransition(from, to, cause), `subscription ${row.id}: ${from} → ${to} (${cause})`);
}

export function subscriptionUrl(publicBaseUrl: string, id: string): string {
  return `${publicBaseUrl}/s/${id}`;
}

async function openInvoiceOf(tx: Tx, row: SubscriptionsTable, publicBaseUrl: string) {
  if (row.open_invoice_id === null) return null;
  const r = await tx.db
    .selectFrom("subscription_invoices")
    .innerJoin("invoices", "invoices.id", "subscription_invoices.invoice_id")
    .innerJoin("currencies", "currencies.ticker", "invoices.currency")
    .select([
      "invoices.id",
      "invoices.status",
      "invoices.amount",
      "invoices.currency",
      "currencies.decimals",
      "subscription_invoices.period",
      "subscription_invoices.period_start",
      "subscription_invoices.period_end",
    ])
    .where("subscription_invoices.invoice_id", "=", row.open_invoice_id)
    .executeTakeFirst();
  assert(r !== undefined, `subscription ${row.id} has its open invoice`);
  return {
    id: r.id,
    url: invoiceUrl(publicBaseUrl, r.id),
    status: r.status,
    amount: formatAmount(BigInt(r.amount), Number(r.decimals)),
    currency: r.currency,
    period: Number(r.period),
    periodStart: r.period_start,
    periodEnd: r.period_end,
  };
}

export async function subscriptionObject(
  tx: Tx,
  row: SubscriptionsTable,
  publicBaseUrl: string,
): Promise<SubscriptionObject> {
  return {
    id: row.id,
    url: subscriptionUrl(publicBaseUrl, row.id),
    planId: row.plan_id,
    nextPlanId: row.next_plan_id,
    customer: { reference: row.customer_reference, email: row.customer_email },
    callbackUrl: row.callback_url,
    status: subscriptionStatusOf(row),
    period: row.period,
    currentPeriodStart: row.current_period_start,
    currentPeriodEnd: row.current_period_end,
    trialEnd: row.trial_end,
    cancelAtPeriodEnd: Number(row.cancel_at_period_end) === 1,
    canceledAt: row.canceled_at,
    openInvoice: await openInvoiceOf(tx, row, publicBaseUrl),
    testClock: row.test_clock,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Records a subscription event with the subscription as it now is. */
export async function recordSubscriptionChange(
  tx: Tx,
  type: SubscriptionEventType,
  row: SubscriptionsTable,
  context: { now: string; publicBaseUrl: string },
): Promise<void> {
  const subscription = await subscriptionObject(tx, row, context.publicBaseUrl);
  await recordSubscriptionEvent(tx, type, subscription, { merchantId: row.merchant_id, now: context.now });
}

/**
 * In the transaction that completes an invoice (applyTransition): when it is a subscription
 * period's invoice, that period is paid, once. A payment for the current period of an incomplete
 * or past_due subscription makes it active; one ahead is kept for the period's start. An unpaid or
 * canceled subscription is over: a late payment to its invoice follows §5 and §19 like any other.
 */
export async function recordPeriodPaid(
  tx: Tx,
  invoiceId: string,
  context: { now: string; publicBaseUrl: string },
): Promise<void> {
  const link = await tx.db
    .selectFrom("subscription_invoices")
    .select(["subscription_id", "period"])
    .where("invoice_id", "=", invoiceId)
    .executeTakeFirst();
  if (!link) return;
  const row = await lockSubscription(tx, link.subscription_id);
  assert(row !== null, `subscription ${link.subscription_id} of invoice ${invoiceId} exists`);
  const status = subscriptionStatusOf(row);
  const period = Number(link.period);
  if (status === "unpaid" || status === "canceled" || row.paid_period >= period) return;
  const changes: Partial<SubscriptionsTable> = {
    paid_period: period,
    open_invoice_id: row.open_invoice_id === invoiceId ? null : row.open_invoice_id,
  };
  if (period === row.period && (status === "incomplete" || status === "past_due")) {
    assertSubscriptionTransition(row, "active", "paid");
    changes.status = "active";
  }
  const saved = await saveSubscription(tx, row, changes, context.now);
  await recordSubscriptionChange(tx, "subscription.renewed", saved, context);
}
