// Use cases of plans (product §29): the merchant creates, lists, reads and retires the plans its customers subscribe to.
import type { Currency } from "../domain/currencies.ts";
import { newRowId } from "../domain/ids.ts";
import { type AmountError, parseAmount } from "../domain/money.ts";
import { assert, ok, type Result } from "../domain/result.ts";
import {
  checkPlanTerms,
  DEFAULT_GRACE_DAYS,
  DEFAULT_RENEWAL_NOTICE_DAYS,
  type PlanInterval,
  type PlanTermsError,
} from "../domain/subscriptions.ts";
import { findCurrency } from "../store/currencies.ts";
import { type ListError, merchantPage, type Page, type PageWindow } from "../store/keyset.ts";
import type { PlansTable } from "../store/schema.ts";
import { nowIso, type Tx } from "../store/store.ts";
import { findPlanRow, type PlanObject, planObject } from "../store/subscriptions.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

export interface PlanInput {
  name: string;
  currency: string;
  amount: string;
  interval: PlanInterval;
  intervalCount?: number | undefined;
  trialDays?: number | undefined;
  graceDays?: number | undefined;
  renewalNoticeDays?: number | undefined;
}

export type PlanRefusal = "unknown_currency" | AmountError | PlanTermsError;

async function planCurrency(tx: Tx, ticker: string): Promise<Currency> {
  const currency = await findCurrency(tx, ticker);
  if (currency === null) return refuse("unknown_currency", `${ticker} is not a currency of the catalog.`, "/currency");
  return currency;
}

function planAmount(value: string, currency: Currency): bigint {
  const parsed = parseAmount(value, currency.decimals);
  if (parsed.ok) return parsed.value;
  const detail: Record<AmountError, string> = {
    invalid_amount: 'amount must be a plain decimal string such as "25.5".',
    amount_not_positive: "amount must be positive.",
    amount_too_precise: `amount has more fraction digits than ${currency.ticker} has (${currency.decimals}).`,
  };
  return refuse(parsed.error, detail[parsed.error], "/amount");
}

/** Creates a plan of the merchant; a refusal changes nothing. */
export function createPlan(
  ctx: ServiceContext,
  merchantId: string,
  input: PlanInput,
  /** Runs in the creating transaction (the dashboard's audit row commits with the plan). */
  alongside?: (tx: Tx, plan: PlanObject) => Promise<unknown>,
): Promise<Outcome<PlanObject, PlanRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const currency = await planCurrency(tx, input.currency);
      const amount = planAmount(input.amount, currency);
      const terms = checkPlanTerms({
        interval: input.interval,
        intervalCount: input.intervalCount ?? 1,
        trialDays: input.trialDays ?? 0,
        graceDays: input.graceDays ?? DEFAULT_GRACE_DAYS,
        renewalNoticeDays: input.renewalNoticeDays ?? DEFAULT_RENEWAL_NOTICE_DAYS,
      });
      if (!terms.ok) return refuse(terms.error, `${terms.detail}.`, "/");
      const now = nowIso();
      const row: PlansTable = {
        id: newRowId(),
        merchant_id: merchantId,
        name: input.name,
        currency: currency.ticker,
        amount: amount.toString(),
        interval: terms.value.interval,
        interval_count: terms.value.intervalCount,
        trial_days: terms.value.trialDays,
        grace_days: terms.value.graceDays,
        renewal_notice_days: terms.value.renewalNoticeDays,
        active: 1,
        created_at: now,
        updated_at: now,
      };
      await tx.db.insertInto("plans").values(row).execute();
      const plan = planObject(row, currency.decimals);
      await alongside?.(tx, plan);
      return plan;
    }),
  );
}

async function withDecimals(tx: Tx, row: PlansTable): Promise<PlanObject> {
  const currency = await findCurrency(tx, row.currency);
  assert(currency !== null, `plan ${row.id} has its currency`);
  return planObject(row, currency.decimals);
}

/** The merchant's plan; another merchant's is null, as an unknown one. */
export async function getPlan(ctx: ServiceContext, merchantId: string, id: string): Promise<PlanObject | null> {
  const row = await findPlanRow(ctx.store, id, merchantId);
  return row === null ? null : withDecimals(ctx.store, row);
}

/** A page of the merchant's plans, newest first. */
export async function listPlans(
  ctx: ServiceContext,
  merchantId: string,
  window: PageWindow,
): Promise<Result<Page<PlanObject>, ListError>> {
  const page = await merchantPage(
    ctx.store,
    { table: "plans", idColumn: "id", columns: { createdAt: "created_at", id: "id" }, noun: "a plan" },
    merchantId,
    window,
    ctx.store.db.selectFrom("plans").selectAll().where("merchant_id", "=", merchantId),
  );
  if (!page.ok) return page;
  const data = [];
  for (const row of page.value.data) data.push(await withDecimals(ctx.store, row));
  return ok({ data, hasMore: page.value.hasMore });
}

/**
 * Retires (or reactivates) the merchant's plan; null when it has none with this id. A retired plan
 * takes no new subscriptions and no plan changes to it; its subscriptions continue.
 */
export async function setPlanActive(
  ctx: ServiceContext,
  merchantId: string,
  id: string,
  active: boolean,
  alongside?: (tx: Tx) => Promise<unknown>,
): Promise<PlanObject | null> {
  return ctx.store.transaction(async (tx) => {
    const row = await tx.db
      .updateTable("plans")
      .set({ active: active ? 1 : 0, updated_at: nowIso() })
      .where("id", "=", id)
      .where("merchant_id", "=", merchantId)
      .returningAll()
      .executeTakeFirst();
    if (!row) return null;
    await alongside?.(tx);
    return withDecimals(tx, row);
  });
}
