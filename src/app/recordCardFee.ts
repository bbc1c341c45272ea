// The card provider's fee of one card payment or refund (product §20): read from its balance transaction, posted once as the operator's cost.
import { type CardFeeSource, cardFeeMovement, checkBalanceTransaction } from "../domain/cardFee.ts";
import { type CardProvider, fromProviderMinor, providerDecimals } from "../domain/cardProvider.ts";
import { err, ok, type Result } from "../domain/result.ts";
import { findCurrency } from "../store/currencies.ts";
import { postMovement } from "../store/ledger.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";

/**
 * `recorded`: posted now. `already`: posted before (no call to the provider). `none`: the provider
 * kept nothing. `fee_pending`: the provider has no balance transaction yet, `provider_unavailable`:
 * it did not answer (both worth asking again); `provider_refused`: it refused to show it (a
 * restricted key without read access, say); `inconsistent_fee`: its figures do not add up.
 */
export type CardFeeError = "fee_pending" | "provider_unavailable" | "provider_refused" | "inconsistent_fee";

async function alreadyPosted(tx: Tx, source: CardFeeSource, id: string): Promise<boolean> {
  const row = await tx.db
    .selectFrom("ledger_movements")
    .select("id")
    .where("cause", "=", "card_fee")
    .where("cause_id", "=", id)
    .where("kind", "=", source)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * The ledger counts a currency in the catalog's minor units; a currency the provider settles in that
 * is not in the catalog (the account's own, say GBP) is counted in the provider's.
 */
async function ledgerDecimals(tx: Tx, currency: string): Promise<number> {
  const entry = await findCurrency(tx, currency);
  return entry?.decimals ?? providerDecimals(currency);
}

/**
 * Records the fee of a payment or refund once, in the currency the provider charged it in. Safe to
 * call on every delivery of its events, in parallel too: the ledger keys the movement by the payment
 * or refund, and once it is posted the provider is not asked again.
 */
export async function recordCardFee(
  ctx: ServiceContext,
  provider: CardProvider,
  of: { source: CardFeeSource; id: string },
): Promise<Result<"recorded" | "already" | "none", CardFeeError>> {
  if (await alreadyPosted(ctx.store, of.source, of.id)) return ok("already");
  const fetched = await provider.balanceTransaction(of);
  if (!fetched.ok) return err(fetched.error, `${of.source} ${of.id}: ${fetched.detail ?? "no detail"}`);
  if (fetched.value === null) return err("fee_pending", `${of.source} ${of.id} has no balance transaction yet`);
  const checked = checkBalanceTransaction(fetched.value);
  if (!checked.ok) return checked;
  const bt = checked.value;
  return ctx.store.transaction(async (tx): Promise<Result<"recorded" | "already" | "none", CardFeeError>> => {
    const fee = fromProviderMinor(bt.feeMinor, await ledgerDecimals(tx, bt.currency), bt.currency);
    if (!fee.ok) return err("inconsistent_fee", fee.detail);
    const fees = cardFeeMovement({
      source: of.source,
      sourceId: of.id,
      balanceTransactionId: bt.id,
      currency: bt.currency,
      feeMinor: fee.value,
    });
    if (fees === null) return ok("none");
    const posted = await postMovement(tx, fees, nowIso());
    if (!posted.ok && posted.error !== "already_posted") return err("inconsistent_fee", posted.detail);
    return ok(posted.ok ? "recorded" : "already");
  });
}
