// The subscription's page (/s/{id}, product §29) as its payer may see it: the plan, the status, the open invoice, the renewals pre-authorized, and whether more may be.
import { formatAmount } from "../domain/money.ts";
import type { SubscriptionObject } from "../domain/subscriptions.ts";
import { findCurrency } from "../store/currencies.ts";
import { findMerchant } from "../store/merchants.ts";
import { renewalsOf } from "../store/renewalAuthorizations.ts";
import { findPlanRow, subscriptionObject } from "../store/subscriptions.ts";
import type { ServiceContext } from "./context.ts";
import { firstRenewalPeriod, renewalToken, renewalView, subscriptionEnded } from "./renewalAuthorizations.ts";

export interface SubscriptionPageView {
  subscription: SubscriptionObject;
  plan: { name: string; currency: string; amount: string; decimals: number; interval: string; intervalCount: number };
  merchant: { name: string | null; logo: string | null; whitelabeling: boolean };
  renewals: ReturnType<typeof renewalView>[];
  /** Where more periods may be pre-authorized (live, an EIP-3009 token); null: nowhere. */
  preauthorize: { network: string; chainId: number; currency: string; firstPeriod: number } | null;
}

/** The page's view of a subscription by id alone (the id is the capability, as an invoice's), or null. */
export async function subscriptionPageView(ctx: ServiceContext, id: string): Promise<SubscriptionPageView | null> {
  const row = await ctx.store.db.selectFrom("subscriptions").selectAll().where("id", "=", id).executeTakeFirst();
  if (row === undefined) return null;
  const [plan, merchant] = await Promise.all([
    findPlanRow(ctx.store, row.plan_id),
    findMerchant(ctx.store, row.merchant_id),
  ]);
  if (plan === null) return null;
  const currency = await findCurrency(ctx.store, plan.currency);
  const decimals = currency?.decimals ?? 0;
  const token = subscriptionEnded(row) ? null : await renewalToken(ctx, plan);
  return {
    subscription: await subscriptionObject(ctx.store, row, ctx.config.publicBaseUrl),
    plan: {
      name: plan.name,
      currency: plan.currency,
      amount: formatAmount(BigInt(plan.amount), decimals),
      decimals,
      interval: plan.interval,
      intervalCount: plan.interval_count,
    },
    merchant: {
      name: merchant?.merchantName ?? null,
      logo: merchant?.logo ?? null,
      whitelabeling: merchant?.whitelabeling ?? false,
    },
    renewals: (await renewalsOf(ctx.store, row.id)).map(renewalView),
    preauthorize:
      token === null || typeof token === "string"
        ? null
        : {
            network: token.entry.network,
            chainId: token.chainId,
            currency: token.entry.internalTicker,
            firstPeriod: firstRenewalPeriod(row),
          },
  };
}
