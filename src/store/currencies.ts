// Currency catalog repository: seeding the default catalog, reading it, and operator limit changes.
import { type CatalogCurrency, type Currency, type CurrencyType, DEFAULT_CATALOG } from "../domain/currencies.ts";
import { formatDecimal, parseAmount, parseDecimal } from "../domain/money.ts";
import { parseRateSource, serializeRateSource } from "../domain/rates.ts";
import { assert } from "../domain/result.ts";
import { parseCatalogAuthorization, serializeCatalogAuthorization } from "../domain/walletAuthorization.ts";
import { preparedQuery } from "./prepared.ts";
import { readThrough } from "./readCache.ts";
import type { CurrenciesTable } from "./schema.ts";
import type { Tx } from "./store.ts";

function toMinor(text: string, decimals: number): bigint {
  if (text === "0") return 0n;
  const parsed = parseAmount(text, decimals);
  assert(parsed.ok, `catalog amount ${text} fits ${decimals} decimals`);
  return parsed.value;
}

function row(currency: CatalogCurrency, sortOrder: number): CurrenciesTable {
  return currencyRow(
    {
      ...currency,
      networkFeeMinor: toMinor(currency.networkFee, currency.decimals),
      withdrawalMinMinor: toMinor(currency.withdrawalMin, currency.decimals),
      withdrawalMaxMinor: toMinor(currency.withdrawalMax, currency.decimals),
      rateUsd: currency.rateUsd,
    },
    sortOrder,
  );
}

/** The stored form of a currency (amounts in minor units, the rate as decimal text). */
function currencyRow(currency: Omit<Currency, "rateUsd"> & { rateUsd: string }, sortOrder: number): CurrenciesTable {
  return {
    ticker: currency.ticker,
    full_name: currency.fullName,
    network: currency.network,
    contract_address: currency.contractAddress,
    type: currency.type,
    icon: currency.icon,
    icon_dark: currency.iconDark,
    internal_ticker: currency.internalTicker,
    decimals: currency.decimals,
    network_fee: currency.networkFeeMinor.toString(),
    withdrawal_min: currency.withdrawalMinMinor.toString(),
    withdrawal_max: currency.withdrawalMaxMinor.toString(),
    rate_usd: currency.rateUsd,
    sort_order: sortOrder,
    // Seeding (which may run on a schema before migration 025 in upgrade tests) names no source: the column's null, static.
    ...(currency.rateSource === undefined ? {} : { rate_source: serializeRateSource(currency.rateSource) }),
    // Likewise before migration 043: an entry that names no authorization leaves the column alone.
    ...(currency.authorization === undefined
      ? {}
      : { wallet_authorization: serializeCatalogAuthorization(currency.authorization) }),
    // And before migration 048: an entry that names no minimum leaves the column alone.
    ...(currency.minDepositMinor === undefined ? {} : { min_deposit: currency.minDepositMinor?.toString() ?? null }),
  };
}

/** Adds catalog currencies the store lacks; never overwrites what an operator configured. */
export async function seedCatalog(tx: Tx, catalog: readonly CatalogCurrency[] = DEFAULT_CATALOG): Promise<void> {
  await tx.db
    .insertInto("currencies")
    .values(catalog.map((currency, index) => row(currency, index)))
    .onConflict((oc) => oc.column("ticker").doNothing())
    .execute();
}

function fromRow(r: CurrenciesTable): Currency {
  const rateUsd = parseDecimal(r.rate_usd);
  assert(rateUsd !== null && rateUsd.units > 0n, `currency ${r.ticker} has a positive rate`);
  return {
    ticker: r.ticker,
    fullName: r.full_name,
    network: r.network,
    contractAddress: r.contract_address,
    type: r.type as CurrencyType,
    icon: r.icon,
    iconDark: r.icon_dark,
    internalTicker: r.internal_ticker,
    decimals: r.decimals,
    networkFeeMinor: BigInt(r.network_fee),
    withdrawalMinMinor: BigInt(r.withdrawal_min),
    withdrawalMaxMinor: BigInt(r.withdrawal_max),
    rateUsd,
    rateSource: parseRateSource(r.rate_source),
    authorization: parseCatalogAuthorization(r.wallet_authorization),
    minDepositMinor: r.min_deposit === null || r.min_deposit === undefined ? null : BigInt(r.min_deposit),
    ...(r.symbol !== null && r.symbol !== undefined && r.symbol !== r.ticker ? { symbol: r.symbol } : {}),
  };
}

// Read by every invoice and withdrawal: compiled once (see prepared.ts).
const listQuery = preparedQuery([] as const, (db) =>
  db.selectFrom("currencies").selectAll().orderBy("sort_order").orderBy("ticker"),
);

const findQuery = preparedQuery(["ticker"] as const, (db, a) =>
  db.selectFrom("currencies").selectAll().where("ticker", "=", a.ticker),
);

export async function listCurrencies(tx: Tx): Promise<Currency[]> {
  const rows = await listQuery(tx, {});
  return rows.map(fromRow);
}

export async function findCurrency(tx: Tx, ticker: string): Promise<Currency | null> {
  return readThrough(tx, "currencies", ticker, async () => {
    const [r] = await findQuery(tx, { ticker });
    return r ? fromRow(r) : null;
  });
}

export async function updateWithdrawalLimits(
  tx: Tx,
  ticker: string,
  limits: { minMinor: bigint; maxMinor: bigint },
): Promise<Currency | null> {
  const result = await tx.db
    .updateTable("currencies")
    .set({ withdrawal_min: limits.minMinor.toString(), withdrawal_max: limits.maxMinor.toString() })
    .where("ticker", "=", ticker)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return null;
  return findCurrency(tx, ticker);
}

/** Whether money ever moved in `ticker`: an invoice, a ledger entry or a payout in it (decimals are then fixed). */
export async function moneyMovedIn(tx: Tx, ticker: string): Promise<boolean> {
  const [entry, invoice, payout] = await Promise.all([
    tx.db.selectFrom("ledger_entries").select("id").where("currency", "=", ticker).limit(1).executeTakeFirst(),
    tx.db
      .selectFrom("invoices")
      .select("id")
      .where((eb) => eb.or([eb("currency", "=", ticker), eb("settlement_currency", "=", ticker)]))
      .limit(1)
      .executeTakeFirst(),
    tx.db.selectFrom("payouts").select("request_id").where("currency", "=", ticker).limit(1).executeTakeFirst(),
  ]);
  return entry !== undefined || invoice !== undefined || payout !== undefined;
}

/** Creates or replaces a catalog entry (operator); a new entry sorts after the others. */
export async function putCurrency(tx: Tx, currency: Currency): Promise<Currency> {
  const existing = await tx.db
    .selectFrom("currencies")
    .select("sort_order")
    .where("ticker", "=", currency.ticker)
    .executeTakeFirst();
  let sortOrder = existing?.sort_order;
  if (sortOrder === undefined) {
    const last = await tx.db
      .selectFrom("currencies")
      .select((eb) => eb.fn.max("sort_order").as("m"))
      .executeTakeFirst();
    sortOrder = Number(last?.m ?? -1) + 1;
  }
  const values = {
    ...currencyRow({ ...currency, rateUsd: formatDecimal(currency.rateUsd) }, sortOrder),
    symbol: currency.symbol ?? currency.ticker,
  };
  if (existing) {
    const { ticker: _ticker, sort_order: _sort, ...changes } = values;
    await tx.db.updateTable("currencies").set(changes).where("ticker", "=", currency.ticker).execute();
  } else {
    await tx.db.insertInto("currencies").values(values).execute();
  }
  const stored = await findCurrency(tx, currency.ticker);
  assert(stored !== null, `currency ${currency.ticker} was just written`);
  return stored;
}

/**
 * The entries of the currency answered as `symbol` (product §23), first entry first; empty when
 * none. Read through the row cache: every CreateInvoice and EstimateFees asks it.
 */
export async function entriesOf(tx: Tx, symbol: string): Promise<Currency[]> {
  const cached = await readThrough(tx, "currency_entries", symbol, async () => {
    const rows = await tx.db
      .selectFrom("currencies")
      .selectAll()
      .where((eb) => eb.or([eb("symbol", "=", symbol), eb.and([eb("symbol", "is", null), eb("ticker", "=", symbol)])]))
      .orderBy("sort_order")
      .execute();
    const entries = rows.map(fromRow);
    // An unknown ticker is not cached (absent rows never are): a first entry is seen at once.
    if (entries.length === 0) return null;
    // The first entry (keyed by the symbol itself) leads: its key is what invoices in the ticker reference.
    return [...entries.filter((e) => e.ticker === symbol), ...entries.filter((e) => e.ticker !== symbol)];
  });
  // A copy: the cached array is frozen and shared.
  return cached === null ? [] : [...cached];
}

/** The entry whose `internalTicker` is `name` (checked before the key: `USDT_ERC20` names the `USDT` entry). */
export async function findEntryByInternalTicker(tx: Tx, name: string): Promise<Currency | null> {
  const r = await tx.db
    .selectFrom("currencies")
    .selectAll()
    .where("internal_ticker", "=", name)
    .orderBy("sort_order")
    .executeTakeFirst();
  return r ? fromRow(r) : null;
}

/**
 * What a request's `currency` names (product §23): a ticker (every entry of the currency, the
 * first one leading) or an `internalTicker` (that entry only: `restricted`). Null: unknown.
 */
export async function resolveCurrencyName(
  tx: Tx,
  name: string,
): Promise<{ primary: Currency; entries: Currency[]; restricted: Currency | null } | null> {
  const entries = await entriesOf(tx, name);
  const primary = entries[0];
  if (primary !== undefined) return { primary, entries, restricted: null };
  const entry = await findEntryByInternalTicker(tx, name);
  if (entry === null) return null;
  const group = await entriesOf(tx, entry.symbol ?? entry.ticker);
  return { primary: group[0] ?? entry, entries: [entry], restricted: group.length > 1 ? entry : null };
}
