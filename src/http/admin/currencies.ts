// Operator API: currency configuration, and the withdrawal limits per currency.
import { Type } from "typebox";
import type { Currency } from "../../domain/currencies.ts";
import { formatAmount, formatDecimal, parseAmount } from "../../domain/money.ts";
import { findCurrency, listCurrencies, updateWithdrawalLimits } from "../../store/currencies.ts";
import type { App } from "../app.ts";
import type { ServiceContext } from "../context.ts";
import { Problem } from "../problem.ts";
import { MoneyString, problems } from "../schemas.ts";
import { CurrencyConfiguration } from "./schemas.ts";

export function currencyConfiguration(c: Currency) {
  return {
    ticker: c.ticker,
    type: c.type,
    decimals: c.decimals,
    networkFee: formatAmount(c.networkFeeMinor, c.decimals),
    withdrawalMin: formatAmount(c.withdrawalMinMinor, c.decimals),
    withdrawalMax: formatAmount(c.withdrawalMaxMinor, c.decimals),
    rateUsd: formatDecimal(c.rateUsd),
  };
}

export function registerAdminCurrencies(app: App, ctx: ServiceContext): void {
  const security = [{ adminToken: [] }];
  app.get(
    "/currencies",
    {
      schema: {
        operationId: "AdminListCurrencies",
        tags: ["operator"],
        security,
        response: { 200: Type.Array(CurrencyConfiguration), ...problems(401) },
      },
    },
    async () => (await listCurrencies(ctx.store)).map(currencyConfiguration),
  );

  app.put(
    "/currencies/:ticker/limits",
    {
      schema: {
        operationId: "AdminSetWithdrawalLimits",
        tags: ["operator"],
        security,
        params: Type.Object({ ticker: Type.String({ minLength: 1, maxLength: 20 }) }),
        body: Type.Object({ withdrawalMin: MoneyString, withdrawalMax: MoneyString }, { additionalProperties: false }),
        response: { 200: CurrencyConfiguration, ...problems(400, 401, 404, 415) },
      },
    },
    async (request) => {
      const { ticker } = request.params;
      const updated = await ctx.store.transaction(async (tx) => {
        const currency = await findCurrency(tx, ticker);
        if (!currency) throw new Problem("currency_not_found", `Unknown currency ${ticker}.`);
        const min = parseAmount(request.body.withdrawalMin, currency.decimals);
        const max = parseAmount(request.body.withdrawalMax, currency.decimals);
        if (!min.ok || !max.ok || min.value > max.value) {
          throw new Problem(
            "invalid_limits",
            `Limits must be positive, fit ${currency.decimals} fraction digits, and withdrawalMin must not exceed withdrawalMax.`,
          );
        }
        return updateWithdrawalLimits(tx, ticker, { minMinor: min.value, maxMinor: max.value });
      });
      if (!updated) throw new Problem("currency_not_found", `Unknown currency ${ticker}.`);
      return currencyConfiguration(updated);
    },
  );
}
