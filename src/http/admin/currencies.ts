// Operator API: currency configuration, and the withdrawal limits per currency.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import type { Currency } from "../../domain/currencies.ts";
import { checkEvmAddress } from "../../domain/evmAddress.ts";
import { formatAmount, formatDecimal, parseAmount, parseDecimal } from "../../domain/money.ts";
import { checkNetworkName } from "../../domain/networks.ts";
import { type RateSource, STATIC_SOURCE } from "../../domain/rates.ts";
import {
  findCurrency,
  listCurrencies,
  moneyMovedIn,
  putCurrency,
  updateWithdrawalLimits,
} from "../../store/currencies.ts";
import { networkNames } from "../../store/networks.ts";
import { listRateReadings, type RateReading, sourceKey } from "../../store/rateReadings.ts";
import type { App } from "../app.ts";
import { Problem } from "../problem.ts";
import { MoneyString, Nullable, problems } from "../schemas.ts";
import { CurrencyConfiguration, RateSourceSchema } from "./schemas.ts";

/** The rate a quote takes now for a static source, or the feed's last reading when it is of the current source. */
function lastRate(c: Currency, reading: RateReading | undefined) {
  const source = c.rateSource ?? STATIC_SOURCE;
  if (source.kind === "static") {
    return { rateUsd: formatDecimal(c.rateUsd), source: "static" as const, updatedAt: null, readAt: null };
  }
  if (!reading || reading.source !== sourceKey(source)) return null;
  return {
    rateUsd: formatDecimal(reading.rateUsd),
    source: "chainlink" as const,
    updatedAt: reading.feedUpdatedAt,
    readAt: reading.readAt,
  };
}

export function currencyConfiguration(c: Currency, reading?: RateReading) {
  return {
    ticker: c.ticker,
    type: c.type,
    decimals: c.decimals,
    networkFee: formatAmount(c.networkFeeMinor, c.decimals),
    withdrawalMin: formatAmount(c.withdrawalMinMinor, c.decimals),
    withdrawalMax: formatAmount(c.withdrawalMaxMinor, c.decimals),
    rateUsd: formatDecimal(c.rateUsd),
    rateSource: c.rateSource ?? STATIC_SOURCE,
    lastRate: lastRate(c, reading),
  };
}

export function registerAdminCurrencies(app: App, ctx: ServiceContext): void {
  const security = [{ adminToken: [] }];
  app.get(
    "/currencies",
    {
      schema: {
        operationId: "AdminListCurrencies",
        summary: "The currency catalog with its operator settings",
        tags: ["operator"],
        security,
        response: { 200: Type.Array(CurrencyConfiguration), ...problems(401) },
      },
    },
    async () => {
      const [currencies, readings] = await Promise.all([listCurrencies(ctx.store), listRateReadings(ctx.store)]);
      return currencies.map((c) => currencyConfiguration(c, readings.get(c.ticker)));
    },
  );

  app.put(
    "/currencies/:ticker/limits",
    {
      schema: {
        operationId: "AdminSetWithdrawalLimits",
        summary: "Set a currency's withdrawal limits",
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

const CurrencyBody = Type.Object(
  {
    fullName: Type.String({ minLength: 1, maxLength: 100 }),
    network: Type.String({ minLength: 1, maxLength: 32 }),
    contractAddress: Nullable(Type.String({ minLength: 1, maxLength: 100 })),
    type: Type.Union([Type.Literal("stablecoin"), Type.Literal("fiat"), Type.Literal("token")]),
    icon: Type.String({ minLength: 1, maxLength: 500 }),
    iconDark: Type.String({ minLength: 1, maxLength: 500 }),
    internalTicker: Type.String({ minLength: 1, maxLength: 40 }),
    decimals: Type.Integer({ minimum: 0, maximum: 36 }),
    networkFee: Type.Union([Type.Literal("0"), MoneyString]),
    withdrawalMin: MoneyString,
    withdrawalMax: MoneyString,
    rateUsd: MoneyString,
    rateSource: Type.Optional(RateSourceSchema),
  },
  { additionalProperties: false },
);

const CurrencyEntry = Type.Object(
  {
    ...CurrencyConfiguration.properties,
    fullName: Type.String(),
    network: Type.String(),
    contractAddress: Nullable(Type.String()),
    icon: Type.String(),
    iconDark: Type.String(),
    internalTicker: Type.String(),
  },
  { additionalProperties: false },
);

/** The catalog entry an operator's PUT describes, or why it cannot be one. */
export function currencyFromBody(ticker: string, body: Static<typeof CurrencyBody>): Currency {
  const invalid = (pointer: string, detail: string) =>
    new Problem("invalid_currency", `${pointer.slice(1)}: ${detail}.`, [{ pointer, detail }]);
  if (!/^[A-Z0-9]{2,20}$/.test(ticker))
    throw new Problem("invalid_currency", "A ticker is 2 to 20 capital letters or digits.");
  const fiat = body.type === "fiat";
  if (fiat && (body.network !== "card" || body.contractAddress !== null)) {
    throw invalid("/network", "a fiat currency is on the `card` network, without a contract");
  }
  let contractAddress: string | null = null;
  if (!fiat) {
    const network = checkNetworkName(body.network);
    if (!network.ok) throw invalid("/network", network.detail ?? "is not a network name");
    if (body.contractAddress !== null) {
      const address = checkEvmAddress(body.contractAddress);
      if (!address.ok)
        throw new Problem("invalid_address", `contractAddress: ${address.detail}.`, [
          { pointer: "/contractAddress", detail: address.detail ?? "" },
        ]);
      contractAddress = address.value;
    }
  }
  const amount = (pointer: string, text: string, zeroAllowed: boolean) => {
    if (zeroAllowed && /^0(\.0*)?$/.test(text)) return 0n;
    const parsed = parseAmount(text, body.decimals);
    if (!parsed.ok) throw invalid(pointer, `must be positive and fit ${body.decimals} fraction digits`);
    return parsed.value;
  };
  const withdrawalMinMinor = amount("/withdrawalMin", body.withdrawalMin, false);
  const withdrawalMaxMinor = amount("/withdrawalMax", body.withdrawalMax, false);
  if (withdrawalMinMinor > withdrawalMaxMinor) throw invalid("/withdrawalMin", "must not exceed withdrawalMax");
  const rateUsd = parseDecimal(body.rateUsd);
  if (rateUsd === null || rateUsd.units <= 0n) throw invalid("/rateUsd", "must be a positive decimal");
  const rateSource = rateSourceFromBody(body.rateSource);
  return {
    ticker,
    fullName: body.fullName,
    network: body.network,
    contractAddress,
    type: body.type,
    icon: body.icon,
    iconDark: body.iconDark,
    internalTicker: body.internalTicker,
    decimals: body.decimals,
    networkFeeMinor: amount("/networkFee", body.networkFee, true),
    withdrawalMinMinor,
    withdrawalMaxMinor,
    rateUsd,
    rateSource,
  };
}

/** The rate source an operator's PUT names (absent: static), its feed address checksummed. */
function rateSourceFromBody(body: Static<typeof CurrencyBody>["rateSource"]): RateSource {
  if (body === undefined || body.kind === "static") return STATIC_SOURCE;
  const refuse = (pointer: string, detail: string) =>
    new Problem("invalid_rate_source", `rateSource.${pointer.split("/").pop()}: ${detail}.`, [{ pointer, detail }]);
  const network = checkNetworkName(body.network);
  if (!network.ok) throw refuse("/rateSource/network", network.detail ?? "is not a network name");
  const feed = checkEvmAddress(body.feed);
  if (!feed.ok) throw refuse("/rateSource/feed", feed.detail ?? "is not an address");
  return { kind: "chainlink", network: body.network, feed: feed.value, maxAgeSeconds: body.maxAgeSeconds };
}

export function registerAdminPutCurrency(app: App, ctx: ServiceContext): void {
  app.put(
    "/currencies/:ticker",
    {
      schema: {
        operationId: "AdminPutCurrency",
        tags: ["operator"],
        summary: "Create or replace a catalog entry (e.g. point USDT at another chain or a test token)",
        security: [{ adminToken: [] }],
        params: Type.Object({ ticker: Type.String({ minLength: 1, maxLength: 20 }) }),
        body: CurrencyBody,
        response: { 200: CurrencyEntry, ...problems(400, 401, 409, 415) },
      },
    },
    async (request) => {
      const currency = currencyFromBody(request.params.ticker, request.body);
      const stored = await ctx.store.transaction(async (tx) => {
        const existing = await findCurrency(tx, currency.ticker);
        if (existing && existing.decimals !== currency.decimals && (await moneyMovedIn(tx, currency.ticker))) {
          throw new Problem(
            "decimals_locked",
            `Money already moved in ${currency.ticker}: its decimals stay ${existing.decimals} (amounts are stored in its minor units).`,
          );
        }
        const source = currency.rateSource;
        if (source?.kind === "chainlink" && !(await networkNames(tx)).includes(source.network)) {
          throw new Problem(
            "invalid_rate_source",
            `rateSource.network: ${source.network} is not configured (PUT /admin/v1/networks/${source.network} first).`,
            [{ pointer: "/rateSource/network", detail: "is not a configured network" }],
          );
        }
        return putCurrency(tx, currency);
      });
      return {
        ...currencyConfiguration(stored),
        fullName: stored.fullName,
        network: stored.network,
        contractAddress: stored.contractAddress,
        icon: stored.icon,
        iconDark: stored.iconDark,
        internalTicker: stored.internalTicker,
      };
    },
  );
}
