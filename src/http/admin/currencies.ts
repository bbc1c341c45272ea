// Operator API: currency configuration, and the withdrawal limits per currency.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { type Currency, symbolOf } from "../../domain/currencies.ts";
import { checkEvmAddress } from "../../domain/evmAddress.ts";
import { formatAmount, formatDecimal, parseAmount, parseDecimal } from "../../domain/money.ts";
import { checkNetworkName } from "../../domain/networks.ts";
import { type RateSource, STATIC_SOURCE } from "../../domain/rates.ts";
import {
  entriesOf,
  findCurrency,
  findEntryByInternalTicker,
  listCurrencies,
  moneyMovedIn,
  putCurrency,
  updateWithdrawalLimits,
} from "../../store/currencies.ts";
import { findNetwork, networkNames } from "../../store/networks.ts";
import { listRateReadings, type RateReading, sourceKey } from "../../store/rateReadings.ts";
import type { Tx } from "../../store/store.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { CatalogAuthorizationSchema, MoneyString, Nullable, problems } from "../schemas.ts";
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
    // The shared ticker (product §23): several entries may answer the same one, each its internalTicker.
    ticker: symbolOf(c),
    type: c.type,
    decimals: c.decimals,
    networkFee: formatAmount(c.networkFeeMinor, c.decimals),
    withdrawalMin: formatAmount(c.withdrawalMinMinor, c.decimals),
    withdrawalMax: formatAmount(c.withdrawalMaxMinor, c.decimals),
    rateUsd: formatDecimal(c.rateUsd),
    rateSource: c.rateSource ?? STATIC_SOURCE,
    authorization: c.authorization ?? null,
    ...(c.minDepositMinor ? { minDeposit: formatAmount(c.minDepositMinor, c.decimals) } : {}),
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
        params: Type.Object({ ticker: Type.String({ minLength: 1, maxLength: 40 }) }),
        body: Type.Object({ withdrawalMin: MoneyString, withdrawalMax: MoneyString }, { additionalProperties: false }),
        response: { 200: CurrencyConfiguration, ...problems(400, 401, 404, 415) },
      },
    },
    async (request) => {
      const named = request.params.ticker;
      const updated = await ctx.store.transaction(async (tx) => {
        const currency = await entryNamed(tx, named);
        if (!currency) throw new Problem("currency_not_found", `Unknown currency ${named}.`);
        const min = parseAmount(request.body.withdrawalMin, currency.decimals);
        const max = parseAmount(request.body.withdrawalMax, currency.decimals);
        if (!min.ok || !max.ok || min.value > max.value) {
          throw new Problem(
            "invalid_limits",
            `Limits must be positive, fit ${currency.decimals} fraction digits, and withdrawalMin must not exceed withdrawalMax.`,
          );
        }
        return updateWithdrawalLimits(tx, currency.ticker, { minMinor: min.value, maxMinor: max.value });
      });
      if (!updated) throw new Problem("currency_not_found", `Unknown currency ${named}.`);
      return currencyConfiguration(updated);
    },
  );
}

const CurrencyBody = Type.Object(
  {
    /** The shared ticker of a new entry on another network (`PUT /currencies/USDT_BASE` with `ticker: USDT`); absent: the path's. */
    ticker: Type.Optional(Type.String({ pattern: "^[A-Z0-9]{2,20}$" })),
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
    /** Payment by signature (product §28); absent or null: transfers only. An EIP-3009 domain is checked against the contract when its network is configured. */
    authorization: Type.Optional(CatalogAuthorizationSchema),
    /** Deposits to customers' addresses below this are the operator's dust (product §30); absent or null: no minimum. */
    minDeposit: Type.Optional(Nullable(MoneyString)),
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
  if (!/^[A-Z0-9][A-Z0-9_]{1,39}$/.test(ticker))
    throw new Problem(
      "invalid_currency",
      "A ticker is 2 to 20 capital letters or digits (an internalTicker may hold _).",
    );
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
    authorization: authorizationFromBody(body, contractAddress),
    minDepositMinor: body.minDeposit ? amount("/minDeposit", body.minDeposit, false) : null,
  };
}

/** An entry's authorization: only a token contract's (a native coin or a fiat currency has none to sign). */
function authorizationFromBody(
  body: Static<typeof CurrencyBody>,
  contractAddress: string | null,
): Currency["authorization"] {
  const authorization = body.authorization ?? null;
  if (authorization !== null && contractAddress === null) {
    throw new Problem("invalid_currency", "authorization: only a token contract's entry takes signed payments.", [
      { pointer: "/authorization", detail: "needs a contractAddress" },
    ]);
  }
  return authorization;
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
        params: Type.Object({ ticker: Type.String({ minLength: 1, maxLength: 40 }) }),
        body: CurrencyBody,
        response: { 200: CurrencyEntry, ...problems(400, 401, 409, 415, 503) },
      },
    },
    async (request) => {
      await checkTokenDomain(ctx, request.body);
      const stored = await ctx.store.transaction(async (tx) => {
        const target = await targetOfPut(tx, request.params.ticker, request.body);
        const currency = { ...currencyFromBody(target.key, request.body), symbol: target.symbol };
        await checkEntryFits(tx, currency);
        const existing = target.existing;
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

/**
 * An EIP-3009 entry's domain name and version are the contract's own: a wrong one makes every
 * payer's signature fail on chain. Checked when the entry's network is configured (it has a node
 * to ask); its module (viem) loads only then.
 */
async function checkTokenDomain(ctx: ServiceContext, body: Static<typeof CurrencyBody>): Promise<void> {
  const a = body.authorization;
  if (a === undefined || a === null || a.kind !== "eip3009" || body.contractAddress === null) return;
  const network = await findNetwork(ctx.store, ctx.box, body.network);
  if (network === null) return;
  const { readTokenDomain } = await import("../../chain/walletAuthorizations.ts");
  const read = await readTokenDomain(ctx.chains.for(network.name, network.rpcUrl), body.contractAddress);
  if (!read.answered) throw new Problem("node_unavailable", `The ${network.name} node did not answer; try again.`);
  const found = read.domain;
  if (found === null || found.name !== a.name || found.version !== a.version) {
    const detail =
      found === null
        ? "the contract states no EIP-712 domain (eip712Domain, or name and version)"
        : `the contract's EIP-712 domain is name "${found.name}", version "${found.version}"`;
    throw new Problem("authorization_domain_mismatch", `authorization: ${detail}.`, [
      { pointer: "/authorization", detail },
    ]);
  }
}

/** The entry a currency route names (product §23): an internalTicker, or a ticker with exactly one entry. */
async function entryNamed(tx: Tx, name: string): Promise<Currency | null> {
  const byInternal = await findEntryByInternalTicker(tx, name);
  if (byInternal) return byInternal;
  const entries = await entriesOf(tx, name);
  if (entries.length > 1) {
    throw new Problem(
      "ambiguous_currency",
      `${name} has ${entries.length} entries (one per network): name one by its internalTicker (${entries.map((e) => e.internalTicker).join(", ")}).`,
    );
  }
  return entries[0] ?? (await findCurrency(tx, name));
}

/**
 * Which entry a PUT writes: the one its path names, or a new one. A new entry of a currency that
 * already has one (body `ticker`) is keyed by its internalTicker, which the path must be.
 */
async function targetOfPut(
  tx: Tx,
  name: string,
  body: Static<typeof CurrencyBody>,
): Promise<{ key: string; symbol: string; existing: Currency | null }> {
  const existing = await entryNamed(tx, name);
  if (existing) {
    if (body.ticker !== undefined && body.ticker !== symbolOf(existing)) {
      throw new Problem("invalid_currency", `ticker: the entry ${name} is ${symbolOf(existing)}'s; it cannot change.`, [
        { pointer: "/ticker", detail: "cannot change" },
      ]);
    }
    return { key: existing.ticker, symbol: symbolOf(existing), existing };
  }
  const symbol = body.ticker ?? name;
  const first = (await entriesOf(tx, symbol))[0];
  if (first === undefined) return { key: symbol, symbol, existing: null };
  if (body.internalTicker !== name) {
    throw new Problem(
      "invalid_currency",
      `A further network of ${symbol} is put at its internalTicker (${body.internalTicker}).`,
      [{ pointer: "/internalTicker", detail: "must be the path's name" }],
    );
  }
  return { key: name, symbol, existing: null };
}

/**
 * An internalTicker is unique. Any decimals fit: the ticker's precision follows the smallest of its
 * entries (product §23), while invoice amounts stay in the first entry's units (docs/evm.md).
 */
async function checkEntryFits(tx: Tx, currency: Currency): Promise<void> {
  const holder = await findEntryByInternalTicker(tx, currency.internalTicker);
  if (holder && holder.ticker !== currency.ticker) {
    throw new Problem("internal_ticker_taken", `internalTicker ${currency.internalTicker} names another entry.`, [
      { pointer: "/internalTicker", detail: "names another entry" },
    ]);
  }
}
