// Currency catalog repository: seeding the default catalog, reading it, and operator limit changes.
import { type CatalogCurrency, type Currency, type CurrencyType, DEFAULT_CATALOG } from "../domain/currencies.ts";
import { parseAmount, parseDecimal } from "../domain/money.ts";
import { assert } from "../domain/result.ts";
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
    network_fee: toMinor(currency.networkFee, currency.decimals).toString(),
    withdrawal_min: toMinor(currency.withdrawalMin, currency.decimals).toString(),
    withdrawal_max: toMinor(currency.withdrawalMax, currency.decimals).toString(),
    rate_usd: currency.rateUsd,
    sort_order: sortOrder,
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
