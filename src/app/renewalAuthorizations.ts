// Pre-authorized renewals (product §29): the typed data a payer signs for the next periods, the checks of the signed ones before they are stored, their submission with their period's invoice, and their revocation by the merchant's cancel.
import type { Currency } from "../domain/currencies.ts";
import { newRowId } from "../domain/ids.ts";
import { paymentRail } from "../domain/paymentRails.ts";
import {
  checkRenewalTerms,
  inTokenUnits,
  MAX_RENEWAL_PERIODS,
  type PeriodTerms,
  type RenewalSchedule,
  type RenewalTerms,
  renewalNonce,
  renewalWindow,
  termsOfPeriod,
} from "../domain/renewalAuthorizations.ts";
import { isPlanInterval } from "../domain/subscriptions.ts";
import type { AuthorizationTerms, CatalogAuthorization, SignedAuthorization } from "../domain/walletAuthorization.ts";
import { receiveWithAuthorizationTypes } from "../domain/walletAuthorizationAbi.ts";
import { entriesOf } from "../store/currencies.ts";
import type { LoadedInvoice } from "../store/invoices.ts";
import { findMerchant } from "../store/merchants.ts";
import {
  findRenewal,
  moveRenewal,
  networkChainIds,
  type RenewalAuthorization,
  renewalsOf,
  storeRenewals,
} from "../store/renewalAuthorizations.ts";
import type { PlansTable, SubscriptionsTable } from "../store/schema.ts";
import { nowIso, type Tx } from "../store/store.ts";
import { findPlanRow, lockSubscription } from "../store/subscriptions.ts";
import { acceptAuthorization, findAuthorization, moveAuthorization } from "../store/walletAuthorizations.ts";
import type { ServiceContext } from "./context.ts";
import { currentRails } from "./rails.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

export type RenewalRefusal =
  | "subscription_not_found"
  | "subscription_ended"
  | "authorization_unsupported"
  | "renewal_period_invalid"
  | "authorization_nonce_invalid"
  | "authorization_value"
  | "authorization_window"
  | "authorization_signature"
  | "renewal_already_authorized"
  | "validation_failed";

/** Whether a signature recovers `from` for exactly these terms: the chain module's check, handed in by HTTP. */
export type RecoversSigner = (
  authorization: CatalogAuthorization,
  terms: AuthorizationTerms,
  signed: SignedAuthorization,
) => Promise<boolean>;

/** The token a subscription's renewals are signed for: an EIP-3009 entry of the plan's currency that takes live payments. */
export interface RenewalToken {
  entry: Currency & { authorization: Extract<CatalogAuthorization, { kind: "eip3009" }>; contractAddress: string };
  chainId: number;
  hotWallet: string;
  /** Decimals of the plan's currency (its first entry's): the units plan amounts are kept in. */
  decimals: number;
}

function periodTerms(plan: PlansTable): PeriodTerms {
  return {
    planId: plan.id,
    interval: isPlanInterval(plan.interval) ? plan.interval : "month",
    intervalCount: plan.interval_count,
    graceDays: plan.grace_days,
    renewalNoticeDays: plan.renewal_notice_days,
    amountMinor: BigInt(plan.amount),
  };
}

/** The subscription's schedule of later periods, under its current plan and its pending change. */
async function scheduleOf(tx: Tx, row: SubscriptionsTable): Promise<RenewalSchedule> {
  const current = await findPlanRow(tx, row.plan_id);
  if (current === null) return refuse("subscription_not_found", "The subscription has no plan.", "/");
  const next =
    row.next_plan_id === null || row.next_plan_period === null ? null : await findPlanRow(tx, row.next_plan_id);
  return {
    period: row.period,
    periodStartMs: Date.parse(row.current_period_start),
    anchor: { atMs: Date.parse(row.anchor_at), period: row.anchor_period },
    current: periodTerms(current),
    next: next === null ? null : { terms: periodTerms(next), fromPeriod: row.next_plan_period ?? row.period + 1 },
  };
}

/** Canceled, unpaid or ending at its period's end: no later period comes, so none is pre-authorized. */
export function subscriptionEnded(row: SubscriptionsTable): boolean {
  return row.status === "canceled" || row.status === "unpaid" || Number(row.cancel_at_period_end) === 1;
}

/**
 * The token renewals of this plan are signed for (on `network` when named), or why there is none:
 * live mode with a hot wallet, an EIP-3009 entry of the plan's currency whose network takes live
 * payments, and fees the merchant's (a payer's fees would make each invoice ask more than the plan).
 */
export async function renewalToken(
  ctx: ServiceContext,
  plan: PlansTable,
  network?: string,
): Promise<RenewalToken | string> {
  const hotWallet = ctx.wallet?.hotAddress ?? null;
  if (ctx.config.serviceMode !== "live" || hotWallet === null) return "renewals are signed in live mode only";
  const merchant = await findMerchant(ctx.store, plan.merchant_id);
  if (merchant?.feesPaidBy !== "merchant") return "the merchant's invoices add fees to the plan's amount";
  const [entries, rails, chainIds] = await Promise.all([
    entriesOf(ctx.store, plan.currency),
    currentRails(ctx),
    networkChainIds(ctx.store),
  ]);
  const primary = entries.find((e) => e.ticker === plan.currency) ?? entries[0];
  for (const e of entries) {
    const chainId = chainIds.get(e.network);
    if (network !== undefined && e.network !== network) continue;
    if (e.authorization?.kind !== "eip3009" || e.contractAddress === null || chainId === undefined) continue;
    if (!paymentRail(e, rails).ok || primary === undefined) continue;
    const entry = e as RenewalToken["entry"];
    return { entry, chainId, hotWallet, decimals: primary.decimals };
  }
  return `no ${plan.currency} entry${network === undefined ? "" : ` on ${network}`} takes signed renewals`;
}

/** The subscription and its current plan, or the refusal of a subscription that takes no pre-authorization. */
async function openSubscription(ctx: ServiceContext, id: string) {
  const row = await ctx.store.db.selectFrom("subscriptions").selectAll().where("id", "=", id).executeTakeFirst();
  if (row === undefined) return refuse("subscription_not_found", "No subscription with this id.", "/");
  if (subscriptionEnded(row)) {
    refuse("subscription_ended", "The subscription is ending: no later period is pre-authorized.", "/");
  }
  const plan = await findPlanRow(ctx.store, row.plan_id);
  if (plan === null) return refuse("subscription_not_found", "No subscription with this id.", "/");
  return { row, plan, schedule: await scheduleOf(ctx.store, row) };
}

/** The first period a renewal may be signed for: the first without an invoice yet. */
export function firstRenewalPeriod(row: SubscriptionsTable): number {
  return Math.max(row.period, row.invoiced_period) + 1;
}

/** What the service has `from` sign for period `k`, or null when `k` is not offered. */
function termsFor(
  row: SubscriptionsTable,
  schedule: RenewalSchedule,
  token: RenewalToken,
  at: { k: number; from: string },
): RenewalTerms | null {
  const first = firstRenewalPeriod(row);
  if (!Number.isInteger(at.k) || at.k < first || at.k >= first + MAX_RENEWAL_PERIODS) return null;
  const window = renewalWindow(schedule, at.k);
  if (window === null) return null;
  const amount = termsOfPeriod(schedule, at.k);
  return {
    period: at.k,
    nonce: renewalNonce(row.id, at.k, at.from),
    value: inTokenUnits(amount.amountMinor, token.decimals, token.entry.decimals),
    ...window,
  };
}

function typedData(token: RenewalToken, from: string, t: RenewalTerms) {
  return {
    domain: {
      name: token.entry.authorization.name,
      version: token.entry.authorization.version,
      chainId: token.chainId,
      verifyingContract: token.entry.contractAddress,
    },
    types: receiveWithAuthorizationTypes,
    primaryType: "ReceiveWithAuthorization" as const,
    message: {
      from,
      to: token.hotWallet,
      value: t.value.toString(),
      validAfter: t.validAfter.toString(),
      validBefore: t.validBefore.toString(),
      nonce: t.nonce,
    },
  };
}

/**
 * The typed data for `from` to sign for the next `periods` periods not pre-authorized yet (GET
 * /s/{id}/authorizations), within the twelve periods after the last invoiced one; fewer when a
 * period's window would be too short.
 */
export function renewalOffer(
  ctx: ServiceContext,
  id: string,
  input: { from: string; periods: number; network?: string | undefined },
): Promise<Outcome<RenewalOfferBody, RenewalRefusal>> {
  return withRefusals(async () => {
    const { row, plan, schedule } = await openSubscription(ctx, id);
    const token = await renewalToken(ctx, plan, input.network);
    if (typeof token === "string") return refuse("authorization_unsupported", `${token}.`, "/network");
    const first = firstRenewalPeriod(row);
    const from = input.from.toLowerCase();
    // Periods already pre-authorized are skipped: "the next K" are the next K still to sign.
    const stored = new Set((await renewalsOf(ctx.store, id)).map((a) => a.period));
    const authorizations = [];
    for (let k = first; authorizations.length < input.periods; k++) {
      const terms = termsFor(row, schedule, token, { k, from });
      if (terms === null) break;
      if (!stored.has(k)) authorizations.push({ period: k, typedData: typedData(token, from, terms) });
    }
    return { network: token.entry.network, chainId: token.chainId, token: token.entry.contractAddress, authorizations };
  });
}

export interface RenewalOfferBody {
  network: string;
  chainId: number;
  token: string;
  authorizations: { period: number; typedData: ReturnType<typeof typedData> }[];
}

/** One period's signed renewal as posted, its numbers parsed. */
export interface PostedRenewal {
  period: number;
  nonce: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  signature: string;
}

export interface PostedRenewals {
  network: string;
  from: string;
  authorizations: PostedRenewal[];
}

/** A stored renewal as the page and the POST answer show it. */
export function renewalView(a: RenewalAuthorization) {
  return {
    period: a.period,
    state: a.state,
    network: a.network,
    from: a.from,
    nonce: a.nonce,
    value: a.value.toString(),
    validAfter: a.validAfter.toString(),
    validBefore: a.validBefore.toString(),
  };
}

/** Each posted renewal against the terms the service gives, then its signature: the first refusal, else the rows to store. */
async function checkedRenewals(
  offered: { row: SubscriptionsTable; schedule: RenewalSchedule; token: RenewalToken },
  posted: PostedRenewals,
  recovers: RecoversSigner,
) {
  const { row, schedule, token } = offered;
  const seen = new Set<number>();
  const rows = [];
  for (const [i, p] of posted.authorizations.entries()) {
    const at = `/authorizations/${i}`;
    if (seen.has(p.period)) refuse("validation_failed", `period ${p.period} is posted twice.`, `${at}/period`);
    seen.add(p.period);
    const expected = termsFor(row, schedule, token, { k: p.period, from: posted.from });
    if (expected === null) {
      const first = firstRenewalPeriod(row);
      const detail = `Period ${p.period} takes no renewal: periods ${first} to ${first + MAX_RENEWAL_PERIODS - 1} do, while their window is long enough.`;
      refuse("renewal_period_invalid", detail, `${at}/period`);
    }
    const terms = checkRenewalTerms(expected, p);
    if (!terms.ok) refuse(terms.error, `The renewal's terms: ${terms.detail}.`, at);
    const signed = { kind: "eip3009" as const, from: posted.from, ...p };
    const authorizationTerms = {
      chainId: token.chainId,
      token: token.entry.contractAddress,
      hotWallet: token.hotWallet,
      value: expected.value,
      validBefore: expected.validBefore,
      invoiceId: "",
    };
    if (!(await recovers(token.entry.authorization, authorizationTerms, signed))) {
      refuse(
        "authorization_signature",
        `Period ${p.period}'s signature is not the payer's for these terms.`,
        `${at}/signature`,
      );
    }
    rows.push({
      ...p,
      id: newRowId(),
      subscriptionId: row.id,
      network: token.entry.network,
      currency: token.entry.internalTicker,
      token: token.entry.contractAddress,
      from: posted.from,
    });
  }
  return rows;
}

/**
 * The same authorization as stored: a repeat of the post. The same payer and nonce are the same
 * terms (the nonce names the period), whichever of the payer's signatures of them came first.
 */
function sameRenewal(stored: RenewalAuthorization, asked: { nonce: string; from: string }): boolean {
  return (
    stored.nonce.toLowerCase() === asked.nonce.toLowerCase() && stored.from.toLowerCase() === asked.from.toLowerCase()
  );
}

/**
 * Stores a payer's signed renewals of later periods (POST /s/{id}/authorizations): each period is
 * one the service offers, each window, value and nonce exactly the ones it gives, each signature
 * the payer's. All or nothing. Posted again, the same answer; another authorization for a period
 * already pre-authorized is refused. The subscription's lock orders it with the invoices' making.
 */
export function acceptRenewals(
  ctx: ServiceContext,
  id: string,
  input: PostedRenewals,
  recovers: RecoversSigner,
): Promise<Outcome<ReturnType<typeof renewalView>[], RenewalRefusal>> {
  return withRefusals(async () => {
    const posted = { ...input, from: input.from.toLowerCase() };
    const { row, plan, schedule } = await openSubscription(ctx, id);
    const token = await renewalToken(ctx, plan, posted.network);
    if (typeof token === "string") return refuse("authorization_unsupported", `${token}.`, "/network");
    const rows = await checkedRenewals({ row, schedule, token }, posted, recovers);
    return ctx.store.transaction(async (tx) => {
      // Under the lock the invoices are made with: a period invoiced meanwhile is not stored to wait for nothing.
      const locked = await lockSubscription(tx, id);
      if (locked === null || subscriptionEnded(locked)) {
        refuse("subscription_ended", "The subscription is ending: no later period is pre-authorized.", "/");
      }
      const first = firstRenewalPeriod(locked);
      const late = rows.find((r) => r.period < first);
      if (late !== undefined) {
        refuse("renewal_period_invalid", `Period ${late.period}'s invoice is already made: pay it on its page.`, "/");
      }
      const stored = await storeRenewals(tx, rows, nowIso());
      for (const asked of rows) {
        const now = stored.find((a) => a.period === asked.period);
        if (now === undefined || !sameRenewal(now, asked)) {
          refuse("renewal_already_authorized", `Period ${asked.period} is already pre-authorized.`, "/authorizations");
        }
      }
      return stored.map(renewalView);
    });
  });
}

/**
 * In the transaction that makes period `k`'s invoice (insertPeriodInvoice, under the subscription's
 * lock): its signed renewal becomes the invoice's wallet authorization, which the hot wallet's
 * outbox submits like one posted on the invoice's page. One whose value is not the invoice's amount
 * (the plan changed since) is superseded and never sent: the invoice waits for a payment.
 */
export async function submitRenewal(
  tx: Tx,
  made: { subscriptionId: string; period: number; invoice: LoadedInvoice },
): Promise<void> {
  const renewal = await findRenewal(tx, made.subscriptionId, made.period);
  if (renewal === null || renewal.state !== "signed") return;
  const now = nowIso();
  const { invoice, decimals } = made.invoice;
  const entry = (await entriesOf(tx, invoice.currency)).find((e) => e.internalTicker === renewal.currency);
  const due = entry === undefined ? null : inTokenUnits(invoice.finalAmountMinor, decimals, entry.decimals);
  if (due !== renewal.value) {
    await moveRenewal(tx, renewal, "superseded", now);
    return;
  }
  const { id: _id, subscriptionId: _s, period: _p, state: _st, walletAuthorizationId: _w, ...signed } = renewal;
  const stored = await acceptAuthorization(
    tx,
    { ...signed, id: newRowId(), invoiceId: invoice.id, kind: "eip3009" },
    now,
  );
  if (stored.invoiceId !== invoice.id) await moveRenewal(tx, renewal, "superseded", now);
  else await moveRenewal(tx, renewal, "submitted", now, stored.id);
}

/**
 * The merchant's cancel, in its transaction (after the subscription and its invoices are saved):
 * renewals of periods from `fromPeriod` on are revoked. One already handed to the hot wallet with
 * an invoice the cancel closed, and not sent yet, is withdrawn too (its wallet authorization
 * expires); one already sent, or whose invoice stays open, goes on as any payment of that invoice.
 */
export async function revokeRenewals(tx: Tx, subscriptionId: string, fromPeriod: number): Promise<void> {
  const now = nowIso();
  for (const renewal of await renewalsOf(tx, subscriptionId)) {
    if (renewal.period < fromPeriod) continue;
    if (renewal.state === "signed") {
      await moveRenewal(tx, renewal, "revoked", now);
      continue;
    }
    if (renewal.state !== "submitted" || renewal.walletAuthorizationId === null) continue;
    const handed = await findAuthorization(tx, renewal.walletAuthorizationId);
    if (handed === null || handed.state !== "accepted") continue;
    const invoice = await tx.db
      .selectFrom("invoices")
      .select("status")
      .where("id", "=", handed.invoiceId)
      .executeTakeFirst();
    if (invoice?.status !== "expired" && invoice?.status !== "failed") continue;
    if (await moveAuthorization(tx, handed, "expired", now, "the merchant cancelled the subscription")) {
      await moveRenewal(tx, renewal, "revoked", now);
    }
  }
}
