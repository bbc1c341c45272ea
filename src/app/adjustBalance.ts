// The operator's balance adjustment: one ledger movement between a merchant and the operator's adjustments account, naming its reason.
import { type Static, Type } from "typebox";
import { newRowId } from "../domain/ids.ts";
import { merchantAccount, movement, SYSTEM_ACCOUNTS, transfer } from "../domain/ledger.ts";
import { type AmountError, parseSignedAmount } from "../domain/money.ts";
import { assert } from "../domain/result.ts";
import { resolveCurrencyName } from "../store/currencies.ts";
import { postMovement } from "../store/ledger.ts";
import { findMerchant } from "../store/merchants.ts";
import { nowIso } from "../store/store.ts";
import { balancesOf } from "./balances.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

/** An adjustment: the currency entry it moves, the signed amount, and the memo the ledger keeps. */
export const AdjustBalanceBody = Type.Object(
  {
    currency: Type.String({ minLength: 1, maxLength: 40 }),
    amount: Type.String({ description: "Monetary string; a leading - takes money out", maxLength: 60 }),
    memo: Type.String({ minLength: 1, maxLength: 500 }),
  },
  { additionalProperties: false },
);
export type AdjustBalanceInput = Static<typeof AdjustBalanceBody>;

/** What an adjustment refuses. */
export type AdjustBalanceRefusal =
  | "merchant_not_found"
  | "ambiguous_currency"
  | "unknown_currency"
  | AmountError
  | "insufficient_balance";

/**
 * Posts the adjustment of the merchant's balance: a positive amount credits the merchant from the
 * operator's adjustments account, a negative one takes money out, never below zero. Answers the
 * merchant's balances after it; a refusal writes nothing.
 */
export function adjustBalance(
  ctx: ServiceContext,
  merchantId: string,
  input: AdjustBalanceInput,
): Promise<Outcome<Awaited<ReturnType<typeof balancesOf>>, AdjustBalanceRefusal>> {
  const { currency: ticker, amount, memo } = input;
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      if (!(await findMerchant(tx, merchantId))) refuse("merchant_not_found", "No merchant with this id.", "/", null);
      // An adjustment names an entry: an internalTicker, or a ticker with one entry (product §23).
      const named = await resolveCurrencyName(tx, ticker);
      if (named !== null && named.restricted === null && named.entries.length > 1) {
        refuse(
          "ambiguous_currency",
          `${ticker} has several entries: name one by its internalTicker.`,
          "/currency",
          "names several entries",
        );
      }
      const currency = named === null ? null : (named.restricted ?? named.primary);
      if (!currency) refuse("unknown_currency", `Unknown currency ${ticker}.`, "/currency", "is not a catalog ticker");
      const parsed = parseSignedAmount(amount, currency.decimals);
      if (!parsed.ok) {
        refuse(
          parsed.error,
          `amount must be a non-zero decimal with at most ${currency.decimals} fraction digits.`,
          "/amount",
          "is not a valid adjustment",
        );
      }
      const merchant = merchantAccount(merchantId);
      const postings =
        parsed.value > 0n
          ? transfer(SYSTEM_ACCOUNTS.operatorAdjustments, merchant, currency.ticker, parsed.value)
          : transfer(merchant, SYSTEM_ACCOUNTS.operatorAdjustments, currency.ticker, -parsed.value);
      const posted = await postMovement(
        tx,
        movement({ cause: "adjustment", causeId: newRowId(), kind: "adjustment", memo, postings }),
        nowIso(),
      );
      if (!posted.ok) {
        assert(posted.error === "insufficient_balance", "an adjustment's movement has a cause id of its own");
        refuse("insufficient_balance", `The ${ticker} balance does not cover this adjustment.`, "/", null);
      }
      return balancesOf(tx, merchantId);
    }),
  );
}
