// Currencies: the catalog as CurrencyInfo objects, icons as absolute URLs.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { type Currency, symbolOf } from "../../domain/currencies.ts";
import { listCurrencies } from "../../store/currencies.ts";
import type { App } from "../routeHost.ts";
import { CurrencyInfo } from "../schemas.ts";

export function currencyInfo(currency: Currency, publicBaseUrl: string) {
  return {
    ticker: symbolOf(currency),
    fullName: currency.fullName,
    network: currency.network,
    contractAddress: currency.contractAddress,
    type: currency.type,
    icon: `${publicBaseUrl}${currency.icon}`,
    iconDark: `${publicBaseUrl}${currency.iconDark}`,
    internalTicker: currency.internalTicker,
    authorization: currency.authorization ?? null,
  };
}

export function registerCurrencies(app: App, ctx: ServiceContext): void {
  app.get(
    "/public/v1/currencies",
    {
      schema: {
        operationId: "Currencies",
        // Public: no API key (an explicit empty requirement, not a forgotten one).
        security: [],
        tags: ["reference"],
        summary: "Supported currencies",
        response: { 200: Type.Array(CurrencyInfo) },
      },
    },
    async () => (await listCurrencies(ctx.store)).map((c) => currencyInfo(c, ctx.config.publicBaseUrl)),
  );
}
