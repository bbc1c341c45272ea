// The subscription schedule (product §29): each step (a renewal invoice, a period's start, the grace's end, a cancellation at period end) taken once, by the worker on real time or by a sandbox test clock.
import { formatAmount } from "../domain/money.ts";
import { assertOk, invariantViolation } from "../domain/result.ts";
import { statusAtExpiry } from "../domain/settlement.ts";
import {
  addIntervals,
  graceEndMs,
  nextRunMs,
  nextStep,
  periodStartMs,
  type ScheduleStep,
  statusOfStartedPeriod,
} from "../domain/subscriptions.ts";
import { applyTransition, listPayments, lockInvoice } from "../store/invoices.ts";
import type { PlansTable, SubscriptionsTable } from "../store/schema.ts";
import { nowIso, type Tx } from "../store/store.ts";
import {
  assertSubscriptionTransition,
  findPlanRow,
  lockSubscription,
  periodInvoiceKey,
  planIdForPeriod,
  recordSubscriptionChange,
  saveSubscription,
  schedulePlans,
  scheduleState,
} from "../store/subscriptions.ts";
import type { ServiceContext } from "./context.ts";
import {
  type CreateInvoiceRefusal,
  createPreparedInvoice,
  type PreparedInvoice,
  prepareInvoice,
} from "./createInvoice.ts";
import { type Outcome, withRefusals } from "./refusal.ts";
import { revokeRenewals, submitRenewal } from "./renewalAuthorizations.ts";

/** An invoice lives at most 30 days (§5); a renewal's stays a minute short of that. */
const MAX_INVOICE_LIFETIME_MS = 30 * 86_400_000 - 60_000;
/** A refused renewal invoice (a suspended merchant, a stale rate feed) is tried again this much later. */
export const REFUSED_STEP_RETRY_MS = 15 * 60_000;

/** The window of period `k` (the current one, or the next): its start and end, and the plan it is billed under. */
async function periodWindow(tx: Tx, row: SubscriptionsTable, k: number) {
  const current = await findPlanRow(tx, row.plan_id);
  if (current === null) throw invariantViolation(`subscription ${row.id} has its plan`);
  if (k === row.period) {
    return { plan: current, startMs: Date.parse(row.current_period_start), endMs: Date.parse(row.current_period_end) };
  }
  const planId = planIdForPeriod(row, k);
  const startMs = Date.parse(row.current_period_end);
  if (planId === current.id) {
    const anchor = { atMs: Date.parse(row.anchor_at), period: row.anchor_period };
    return { plan: current, startMs, endMs: periodStartMs(anchor, terms(current), k + 1) };
  }
  const next = await findPlanRow(tx, planId);
  if (next === null) throw invariantViolation(`subscription ${row.id} has its next plan`);
  return { plan: next, startMs, endMs: addIntervals(startMs, terms(next).interval, next.interval_count) };
}

function terms(plan: PlansTable) {
  return { interval: plan.interval as "day" | "week" | "month" | "year", intervalCount: plan.interval_count };
}

/** The step due for the row by `untilMs`, and the time it falls due (a test clock takes each step at that time). */
async function dueStep(tx: Tx, row: SubscriptionsTable, untilMs: number) {
  const { current, next } = await schedulePlans(tx, row);
  const state = scheduleState(row, current, next);
  const step = nextStep(state, untilMs);
  return step === null ? null : { step, dueMs: nextRunMs(state) ?? untilMs };
}

function sameStep(a: ScheduleStep, b: ScheduleStep): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export interface StepClock {
  /** Steps due by this time are taken. */
  untilMs: number;
  /** A test clock: each step happens at its due time; else at real time. */
  testClock: boolean;
}

export type StepOutcome = "taken" | "none" | "deferred";

/**
 * Takes the one step due for the subscription, if any. The step is decided again under the
 * subscription's lock, so of several workers racing only one takes it; the others find nothing.
 */
export async function takeSubscriptionStep(
  ctx: ServiceContext,
  id: string,
  clock: StepClock,
): Promise<Outcome<StepOutcome, CreateInvoiceRefusal>> {
  const row = await ctx.store.db.selectFrom("subscriptions").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row) return { ok: true, value: "none" };
  const due = await dueStep(ctx.store, row, clock.untilMs);
  if (due === null) return { ok: true, value: "none" };
  const atMs = clock.testClock ? due.dueMs : Date.now();
  if (due.step.kind === "invoice") return makePeriodInvoice(ctx, row, { step: due.step, atMs, clock });
  const taken = await ctx.store.transaction(async (tx) => {
    // Invoice before subscription, as a payment locks them: no deadlock with a payment completing.
    if (row.open_invoice_id !== null && due.step.kind !== "start_period") await lockInvoice(tx, row.open_invoice_id);
    const locked = await lockSubscription(tx, id);
    if (!locked || locked.open_invoice_id !== row.open_invoice_id) return "none" as const;
    const again = await dueStep(tx, locked, clock.untilMs);
    if (again === null || !sameStep(again.step, due.step)) return "none" as const;
    return applyStep(ctx, tx, locked, { step: due.step, atMs });
  });
  return { ok: true, value: taken };
}

interface StepAt {
  step: ScheduleStep;
  atMs: number;
}

async function applyStep(ctx: ServiceContext, tx: Tx, row: SubscriptionsTable, at: StepAt): Promise<StepOutcome> {
  const now = nowIso();
  const context = { now, publicBaseUrl: ctx.config.publicBaseUrl };
  switch (at.step.kind) {
    case "start_period": {
      const saved = await startPeriod(tx, row, at.step.paid, now);
      if (!at.step.paid) await recordSubscriptionChange(tx, "subscription.past_due", saved, context);
      return "taken";
    }
    case "unpaid": {
      if (!(await closeOpenInvoice(ctx, tx, row, now))) {
        // Paid in full and waiting for confirmations (or for screening): not unpaid; looked at again later.
        await deferStep(tx, row, at.atMs);
        return "deferred";
      }
      assertSubscriptionTransition(row, "unpaid", "grace_ended");
      const saved = await saveSubscription(tx, row, { status: "unpaid", open_invoice_id: null }, now);
      await recordSubscriptionChange(tx, "subscription.unpaid", saved, context);
      return "taken";
    }
    case "cancel":
      await cancelSubscriptionIn(ctx, tx, row, new Date(at.atMs).toISOString());
      return "taken";
    case "invoice":
      throw invariantViolation("an invoice step runs in makePeriodInvoice");
  }
}

/** The next period starts: under the next plan when a change was asked for it, re-anchored there. */
async function startPeriod(tx: Tx, row: SubscriptionsTable, paid: boolean, now: string) {
  const k = row.period + 1;
  const window = await periodWindow(tx, row, k);
  const status = statusOfStartedPeriod(paid);
  assertSubscriptionTransition(row, status, paid ? "period_started_paid" : "period_started_unpaid");
  const planChanges = window.plan.id !== row.plan_id;
  return saveSubscription(
    tx,
    row,
    {
      status,
      period: k,
      current_period_start: new Date(window.startMs).toISOString(),
      current_period_end: new Date(window.endMs).toISOString(),
      ...(planChanges
        ? {
            plan_id: window.plan.id,
            next_plan_id: null,
            next_plan_period: null,
            anchor_at: new Date(window.startMs).toISOString(),
            anchor_period: k,
          }
        : {}),
    },
    now,
  );
}

/** Pushes the subscription's next look back (a step that could not be taken now). */
async function deferStep(tx: Tx, row: SubscriptionsTable, atMs: number): Promise<void> {
  const later = new Date(Math.max(atMs, Date.now()) + REFUSED_STEP_RETRY_MS).toISOString();
  await tx.db.updateTable("subscriptions").set({ run_at: later }).where("id", "=", row.id).execute();
}

/**
 * Expires (nothing paid) or fails (partly paid) the subscription's open invoice, as its expiry
 * would (§5). False when it must stay open: paid in full awaiting confirmation, or in screening.
 * The caller holds the invoice's lock.
 */
async function closeOpenInvoice(ctx: ServiceContext, tx: Tx, row: SubscriptionsTable, now: string): Promise<boolean> {
  return row.open_invoice_id === null ? true : closeInvoice(ctx, tx, row.open_invoice_id, now);
}

/** closeOpenInvoice of one invoice. */
export async function closeInvoice(ctx: ServiceContext, tx: Tx, invoiceId: string, now: string): Promise<boolean> {
  const invoice = await lockInvoice(tx, invoiceId);
  if (invoice === null) throw invariantViolation(`subscription invoice ${invoiceId} exists`);
  if (invoice.status === "expired" || invoice.status === "failed") return true;
  const change = statusAtExpiry(invoice.status, invoice.finalAmountMinor, await listPayments(tx, invoice.id));
  if (change === null) return false;
  assertOk(await applyTransition(tx, invoice, change.to, change.cause, now, ctx.config.publicBaseUrl), "closing");
  return true;
}

/**
 * Cancels now, in the caller's transaction (which holds the open invoice's lock, then the
 * subscription's): the open invoice is closed if nothing keeps it open, and `subscription.canceled`
 * is recorded. A subscription already canceled is left as it is.
 */
export async function cancelSubscriptionIn(
  ctx: ServiceContext,
  tx: Tx,
  row: SubscriptionsTable,
  at: string,
): Promise<SubscriptionsTable> {
  if (row.status === "canceled") return row;
  const now = nowIso();
  const closed = await closeOpenInvoice(ctx, tx, row, now);
  assertSubscriptionTransition(row, "canceled", "canceled");
  const saved = await saveSubscription(
    tx,
    row,
    { status: "canceled", canceled_at: at, ...(closed ? { open_invoice_id: null } : {}) },
    now,
  );
  await recordSubscriptionChange(tx, "subscription.canceled", saved, { now, publicBaseUrl: ctx.config.publicBaseUrl });
  await revokeRenewals(tx, row.id, 0);
  return saved;
}

/** The invoice's life: until its period's grace ends, on the subscription's clock, within §5's bound. */
function renewalExpiresAt(graceEnd: number, atMs: number): string {
  const realNow = Date.now();
  const lifetime = Math.min(MAX_INVOICE_LIFETIME_MS, Math.max(60_000, graceEnd - atMs));
  return new Date(realNow + lifetime).toISOString();
}

/** The body of period `k`'s invoice (its idempotency key names the period), and the period's window. */
export async function periodInvoiceBody(ctx: ServiceContext, row: SubscriptionsTable, k: number, atMs: number) {
  const window = await periodWindow(ctx.store, row, k);
  const currency = await ctx.store.db
    .selectFrom("currencies")
    .select("decimals")
    .where("ticker", "=", window.plan.currency)
    .executeTakeFirstOrThrow();
  const body = {
    currency: window.plan.currency,
    amount: formatAmount(BigInt(window.plan.amount), Number(currency.decimals)),
    idempotencyKey: periodInvoiceKey(row.id, k),
    description: `${window.plan.name}, period ${k}`,
    expiresAt: renewalExpiresAt(graceEndMs(window.startMs, window.plan.grace_days, row.status === "incomplete"), atMs),
    ...(row.callback_url !== null ? { callbackUrl: row.callback_url } : {}),
  };
  return { body, window };
}

/** In the caller's transaction (holding the subscription's lock): period `k`'s invoice, linked, with `subscription.invoice_created`. */
export async function insertPeriodInvoice(
  ctx: ServiceContext,
  tx: Tx,
  row: SubscriptionsTable,
  made: { k: number; window: Awaited<ReturnType<typeof periodWindow>>; prepared: PreparedInvoice },
): Promise<SubscriptionsTable> {
  const loaded = await createPreparedInvoice(ctx, tx, made.prepared);
  const now = nowIso();
  await tx.db
    .insertInto("subscription_invoices")
    .values({
      subscription_id: row.id,
      period: made.k,
      invoice_id: loaded.invoice.id,
      plan_id: made.window.plan.id,
      period_start: new Date(made.window.startMs).toISOString(),
      period_end: new Date(made.window.endMs).toISOString(),
      created_at: now,
    })
    .execute();
  const saved = await saveSubscription(tx, row, { invoiced_period: made.k, open_invoice_id: loaded.invoice.id }, now);
  await submitRenewal(tx, { subscriptionId: row.id, period: made.k, invoice: loaded });
  await recordSubscriptionChange(tx, "subscription.invoice_created", saved, {
    now,
    publicBaseUrl: ctx.config.publicBaseUrl,
  });
  return saved;
}

/** The invoice step: the period's invoice, an ordinary one (§5), made once; its rates read before the transaction. */
async function makePeriodInvoice(
  ctx: ServiceContext,
  row: SubscriptionsTable,
  input: { step: Extract<ScheduleStep, { kind: "invoice" }>; atMs: number; clock: StepClock },
): Promise<Outcome<StepOutcome, CreateInvoiceRefusal>> {
  const k = input.step.period;
  const made = await withRefusals<StepOutcome, CreateInvoiceRefusal>(async () => {
    const { body, window } = await periodInvoiceBody(ctx, row, k, input.atMs);
    const prepared = await prepareInvoice(ctx, row.merchant_id, body);
    return ctx.store.transaction(async (tx) => {
      const locked = await lockSubscription(tx, row.id);
      if (!locked) return "none";
      const again = await dueStep(tx, locked, input.clock.untilMs);
      if (again === null || !sameStep(again.step, input.step)) return "none";
      await insertPeriodInvoice(ctx, tx, locked, { k, window, prepared });
      return "taken";
    });
  });
  if (!made.ok) await ctx.store.transaction((tx) => deferStep(tx, row, input.atMs));
  return made;
}

/** At most this many subscriptions are looked at per worker pass; at most this many steps each. */
export const SCHEDULE_BATCH_SIZE = 100;
const STEPS_PER_PASS = 8;

/** One pass of the worker: the subscriptions on real time whose run_at passed, each brought up to now. */
export async function runDueSubscriptions(ctx: ServiceContext): Promise<number> {
  const now = nowIso();
  const due = await ctx.store.db
    .selectFrom("subscriptions")
    .select("id")
    .where("run_at", "<=", now)
    .where("test_clock", "is", null)
    .orderBy("run_at")
    .limit(SCHEDULE_BATCH_SIZE)
    .execute();
  let taken = 0;
  for (const { id } of due) {
    for (let i = 0; i < STEPS_PER_PASS; i++) {
      const step = await takeSubscriptionStep(ctx, id, { untilMs: Date.parse(now), testClock: false });
      if (!step.ok || step.value !== "taken") break;
      taken++;
    }
  }
  return taken;
}
