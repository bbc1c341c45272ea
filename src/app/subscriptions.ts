// Use cases of subscriptions (product §29): subscribe a customer (a signed operation), read and list, cancel, change plan, and a sandbox test clock's advance.
import type { CallbackUrlError } from "../domain/callbackUrl.ts";
import type { RetryVerdict } from "../domain/idempotency.ts";
import { newRowId } from "../domain/ids.ts";
import { parseRfc3339 } from "../domain/invoices.ts";
import { ok, type Result } from "../domain/result.ts";
import {
  addIntervals,
  isPlanInterval,
  nextStep,
  type SubscriptionObject,
  type SubscriptionStatus,
} from "../domain/subscriptions.ts";
import { lockInvoice } from "../store/invoices.ts";
import { type ListError, merchantPage, type Page, type PageWindow } from "../store/keyset.ts";
import type { PlansTable, SubscriptionsTable } from "../store/schema.ts";
import { nowIso, type Tx } from "../store/store.ts";
import {
  findPlanRow,
  lockSubscription,
  runAtOf,
  saveSubscription,
  scheduleState,
  subscriptionObject,
} from "../store/subscriptions.ts";
import { callbackUrlRefusal } from "./callbackUrlInput.ts";
import type { ServiceContext } from "./context.ts";
import { type CreateInvoiceRefusal, type PreparedInvoice, prepareInvoice } from "./createInvoice.ts";
import { type IdempotentRequest, performOnce } from "./performOnce.ts";
import { type Outcome, refuse, refuseWith, withRefusals } from "./refusal.ts";
import { revokeRenewals } from "./renewalAuthorizations.ts";
import {
  cancelSubscriptionIn,
  closeInvoice,
  insertPeriodInvoice,
  periodInvoiceBody,
  takeSubscriptionStep,
} from "./subscriptionSchedule.ts";

/** Every refusal of the subscription use cases (a renewal invoice's own included). */
export type SubscriptionRefusal =
  | "unknown_plan"
  | "plan_retired"
  | "subscription_ended"
  | "test_clock_invalid"
  | "conflict"
  | CallbackUrlError
  | CreateInvoiceRefusal;

export interface SubscriptionInput {
  planId: string;
  customer: { reference: string; email?: string | undefined };
  callbackUrl?: string | undefined;
}

/** A plan a subscription may start on or change to: the merchant's, and not retired. */
async function usablePlan(tx: Tx, merchantId: string, planId: string, pointer: string): Promise<PlansTable> {
  const plan = await findPlanRow(tx, planId, merchantId);
  if (plan === null) return refuse("unknown_plan", "No plan of this merchant has this id.", pointer);
  if (Number(plan.active) !== 1)
    return refuse("plan_retired", "The plan is retired: it takes no new subscriptions.", pointer);
  return plan;
}

/** The new subscription's row: trialing through the trial, else incomplete until its first period is paid. */
function newSubscriptionRow(merchantId: string, plan: PlansTable, input: SubscriptionInput, nowMs: number) {
  const now = new Date(nowMs).toISOString();
  const trialEndMs = plan.trial_days > 0 ? addIntervals(nowMs, "day", plan.trial_days) : null;
  const anchorMs = trialEndMs ?? nowMs;
  const interval = isPlanInterval(plan.interval) ? plan.interval : "month";
  const row: SubscriptionsTable = {
    id: newRowId(),
    merchant_id: merchantId,
    plan_id: plan.id,
    next_plan_id: null,
    next_plan_period: null,
    customer_reference: input.customer.reference,
    customer_email: input.customer.email ?? null,
    callback_url: input.callbackUrl ?? null,
    status: trialEndMs === null ? "incomplete" : "trialing",
    anchor_at: new Date(anchorMs).toISOString(),
    anchor_period: 1,
    period: trialEndMs === null ? 1 : 0,
    current_period_start: now,
    current_period_end: new Date(trialEndMs ?? addIntervals(nowMs, interval, plan.interval_count)).toISOString(),
    trial_end: trialEndMs === null ? null : new Date(trialEndMs).toISOString(),
    paid_period: 0,
    invoiced_period: 0,
    open_invoice_id: null,
    cancel_at_period_end: 0,
    canceled_at: null,
    run_at: null,
    test_clock: null,
    created_at: now,
    updated_at: now,
  };
  return row;
}

/** The first invoice when it is due at once (no trial, or a trial shorter than the notice), prepared before the transaction. */
async function firstInvoice(ctx: ServiceContext, row: SubscriptionsTable, plan: PlansTable, nowMs: number) {
  const step = nextStep(scheduleState(row, plan, plan), nowMs);
  if (step?.kind !== "invoice") return null;
  const { body, window } = await periodInvoiceBody(ctx, row, step.period, nowMs);
  const prepared: PreparedInvoice = await prepareInvoice(ctx, row.merchant_id, body);
  return { k: step.period, window, prepared };
}

/**
 * CreateSubscription, a signed operation: once per request id. The first invoice, when due at
 * once, is made in the same transaction, so the answer carries it as `openInvoice`.
 */
export async function performCreateSubscription(
  ctx: ServiceContext,
  idempotent: IdempotentRequest,
  input: SubscriptionInput,
): Promise<Outcome<RetryVerdict, SubscriptionRefusal>> {
  if (input.callbackUrl !== undefined) {
    const refused = await callbackUrlRefusal(input.callbackUrl, ctx.config.serviceMode, "/callbackUrl");
    if (refused !== null) return { ok: false, refusal: refused };
  }
  return withRefusals(async () => {
    const plan = await usablePlan(ctx.store, idempotent.merchantId, input.planId, "/planId");
    const nowMs = Date.now();
    const row = newSubscriptionRow(idempotent.merchantId, plan, input, nowMs);
    const first = await firstInvoice(ctx, row, plan, nowMs);
    return performOnce(ctx, idempotent, async (tx) => {
      await usablePlan(tx, idempotent.merchantId, input.planId, "/planId");
      row.run_at = await runAtOf(tx, row);
      await tx.db.insertInto("subscriptions").values(row).execute();
      const saved = first === null ? row : await insertPeriodInvoice(ctx, tx, row, first);
      return subscriptionObject(tx, saved, ctx.config.publicBaseUrl);
    });
  });
}

/** The merchant's subscription; another merchant's is null, as an unknown one. */
export async function getSubscription(ctx: ServiceContext, merchantId: string, id: string) {
  const row = await ctx.store.db
    .selectFrom("subscriptions")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .executeTakeFirst();
  return row ? subscriptionObject(ctx.store, row, ctx.config.publicBaseUrl) : null;
}

/** The subscription's page (/s/{id}) reads it by id alone: the id is the capability, as an invoice's. */
export async function findSubscriptionForPage(ctx: ServiceContext, id: string) {
  const row = await ctx.store.db.selectFrom("subscriptions").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row) return null;
  const plan = await findPlanRow(ctx.store, row.plan_id);
  return plan === null
    ? null
    : { subscription: await subscriptionObject(ctx.store, row, ctx.config.publicBaseUrl), plan };
}

export interface SubscriptionFilter extends PageWindow {
  status?: SubscriptionStatus | undefined;
  planId?: string | undefined;
  customer?: string | undefined;
}

/** A page of the merchant's subscriptions, newest first, filtered by status, plan or customer reference. */
export async function listSubscriptions(
  ctx: ServiceContext,
  merchantId: string,
  filter: SubscriptionFilter,
): Promise<Result<Page<SubscriptionObject>, ListError>> {
  const page = await merchantPage(
    ctx.store,
    { table: "subscriptions", idColumn: "id", columns: { createdAt: "created_at", id: "id" }, noun: "a subscription" },
    merchantId,
    filter,
    ctx.store.db
      .selectFrom("subscriptions")
      .selectAll()
      .where("merchant_id", "=", merchantId)
      .$if(filter.status !== undefined, (qb) => qb.where("status", "=", filter.status as string))
      .$if(filter.planId !== undefined, (qb) => qb.where("plan_id", "=", filter.planId as string))
      .$if(filter.customer !== undefined, (qb) => qb.where("customer_reference", "=", filter.customer as string)),
  );
  if (!page.ok) return page;
  const data = [];
  for (const row of page.value.data) data.push(await subscriptionObject(ctx.store, row, ctx.config.publicBaseUrl));
  return ok({ data, hasMore: page.value.hasMore });
}

/**
 * Locks the subscription after its open invoice (the order a payment takes): null when the
 * merchant has none with this id. Retried when the open invoice changed between the two reads.
 */
async function lockWithInvoice(tx: Tx, merchantId: string, id: string): Promise<SubscriptionsTable | null> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const seen = await tx.db
      .selectFrom("subscriptions")
      .select("open_invoice_id")
      .where("id", "=", id)
      .where("merchant_id", "=", merchantId)
      .executeTakeFirst();
    if (!seen) return null;
    if (seen.open_invoice_id !== null) await lockInvoice(tx, seen.open_invoice_id);
    const row = await lockSubscription(tx, id, merchantId);
    if (row === null || row.open_invoice_id === seen.open_invoice_id) return row;
  }
  return refuse("conflict", "The subscription changed while it was being cancelled; try again.", "/");
}

/**
 * Cancels the merchant's subscription: now (its open invoice closed, `subscription.canceled`), or
 * at the end of its current period (a renewal invoice already made for the next period is closed
 * unless paid; a paid one is honoured, and the subscription ends with that period). Null: no such
 * subscription. Cancelling a canceled subscription answers it as it is.
 */
export function cancelSubscription(
  ctx: ServiceContext,
  merchantId: string,
  input: { id: string; atPeriodEnd: boolean },
  alongside?: (tx: Tx, subscription: SubscriptionObject) => Promise<unknown>,
): Promise<Outcome<SubscriptionObject | null, SubscriptionRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const row = await lockWithInvoice(tx, merchantId, input.id);
      if (row === null) return null;
      const saved =
        input.atPeriodEnd && row.status !== "canceled" && row.status !== "unpaid"
          ? await cancelAtPeriodEnd(ctx, tx, row)
          : await cancelSubscriptionIn(ctx, tx, row, nowIso());
      const subscription = await subscriptionObject(tx, saved, ctx.config.publicBaseUrl);
      await alongside?.(tx, subscription);
      return subscription;
    }),
  );
}

async function cancelAtPeriodEnd(ctx: ServiceContext, tx: Tx, row: SubscriptionsTable): Promise<SubscriptionsTable> {
  const now = nowIso();
  let openInvoice = row.open_invoice_id;
  // The renewal for a period that will not come: closed if nothing was paid into it.
  if (openInvoice !== null && row.invoiced_period > row.period) {
    const invoice = await lockInvoice(tx, openInvoice);
    if (invoice?.status === "pending" && (await closeInvoice(ctx, tx, openInvoice, now))) openInvoice = null;
  }
  const saved = await saveSubscription(tx, row, { cancel_at_period_end: 1, open_invoice_id: openInvoice }, now);
  await revokeRenewals(tx, row.id, row.period + 1);
  return saved;
}

/**
 * The plan from the next period on (or, when that period's invoice is already made, from the one
 * after). Changing back to the current plan drops a pending change.
 */
export function changeSubscriptionPlan(
  ctx: ServiceContext,
  merchantId: string,
  input: { id: string; planId: string },
): Promise<Outcome<SubscriptionObject | null, SubscriptionRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const row = await lockSubscription(tx, input.id, merchantId);
      if (row === null) return null;
      if (row.status === "canceled" || row.status === "unpaid" || Number(row.cancel_at_period_end) === 1) {
        refuse(
          "subscription_ended",
          `The subscription is ${row.status === "canceled" ? "canceled" : row.status === "unpaid" ? "unpaid" : "ending at its period's end"}: its plan no longer changes.`,
          "/",
        );
      }
      const plan = await usablePlan(tx, merchantId, input.planId, "/planId");
      const from = Math.max(row.period + 1, row.invoiced_period + 1);
      const changes: Partial<SubscriptionsTable> =
        plan.id === row.plan_id
          ? { next_plan_id: null, next_plan_period: null }
          : { next_plan_id: plan.id, next_plan_period: from };
      const saved = await saveSubscription(tx, row, changes, nowIso());
      return subscriptionObject(tx, saved, ctx.config.publicBaseUrl);
    }),
  );
}

/** A test clock moves at most this far per advance, and takes at most this many steps. */
export const MAX_ADVANCE_MS = 5 * 366 * 86_400_000;
export const MAX_ADVANCE_STEPS = 5000;

/**
 * The sandbox's test clock (as Stripe's): the subscription's time moves to `to` and its schedule
 * runs up to then, each step at the time it falls due. From then on the subscription keeps that
 * frozen time (the worker leaves it alone) until advanced again.
 */
export async function advanceTestClock(
  ctx: ServiceContext,
  merchantId: string,
  input: { id: string; to: string },
): Promise<Outcome<SubscriptionObject | null, SubscriptionRefusal>> {
  return withRefusals(async () => {
    const toMs = parseRfc3339(input.to);
    if (toMs === null) return refuse("test_clock_invalid", "to must be an RFC 3339 date-time with an offset.", "/to");
    const frozen = await ctx.store.transaction(async (tx) => {
      const row = await lockSubscription(tx, input.id, merchantId);
      if (row === null) return null;
      const clockMs = row.test_clock === null ? Date.now() : Date.parse(row.test_clock);
      if (toMs < clockMs || toMs - clockMs > MAX_ADVANCE_MS) {
        refuse(
          "test_clock_invalid",
          "to must not lie before the subscription's clock, nor more than 5 years after it.",
          "/to",
        );
      }
      await tx.db
        .updateTable("subscriptions")
        .set({ test_clock: new Date(toMs).toISOString() })
        .where("id", "=", row.id)
        .execute();
      return row;
    });
    if (frozen === null) return null;
    for (let i = 0; i < MAX_ADVANCE_STEPS; i++) {
      const step = await takeSubscriptionStep(ctx, input.id, { untilMs: toMs, testClock: true });
      if (!step.ok) refuseWith(step.refusal);
      if (step.value !== "taken") break;
    }
    return getSubscription(ctx, merchantId, input.id);
  });
}
