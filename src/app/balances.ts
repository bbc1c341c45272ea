// A merchant's balances: every catalog currency with its available amount (the operator API and the dashboard's overview).
import { symbolOf } from "../domain/currencies.ts";
import { formatAmount } from "../domain/money.ts";
import { listCurrencies } from "../store/currencies.ts";
import { merchantBalances } from "../store/ledger.ts";
import type { Tx } from "../store/store.ts";

/** Every catalog currency with the merchant's available amount (zero where nothing ever moved). */
export async function balancesOf(tx: Tx, merchantId: string) {
  const [currencies, balances] = await Promise.all([listCurrencies(tx), merchantBalances(tx, merchantId)]);
  return currencies.map((c) => ({
    currency: symbolOf(c),
    internalTicker: c.internalTicker,
    network: c.network,
    available: formatAmount(balances.get(c.ticker) ?? 0n, c.decimals),
  }));
}

/** One ticker's balance: the total over its catalog entries and each entry's part (product §23, the dashboard's overview). */
export interface TickerBalance {
  currency: string;
  available: string;
  networks: { network: string; internalTicker: string; available: string }[];
}

/**
 * Every ticker with the merchant's total and its networks, in catalog order. The total is exact: each
 * entry's amount is brought to the largest `decimals` among the ticker's entries before adding.
 */
export async function balancesByTicker(tx: Tx, merchantId: string): Promise<TickerBalance[]> {
  const [currencies, balances] = await Promise.all([listCurrencies(tx), merchantBalances(tx, merchantId)]);
  const groups = new Map<string, typeof currencies>();
  for (const c of currencies) groups.set(symbolOf(c), [...(groups.get(symbolOf(c)) ?? []), c]);
  return [...groups].map(([ticker, entries]) => {
    const decimals = Math.max(...entries.map((e) => e.decimals));
    const total = entries.reduce(
      (sum, e) => sum + (balances.get(e.ticker) ?? 0n) * 10n ** BigInt(decimals - e.decimals),
      0n,
    );
    return {
      currency: ticker,
      available: formatAmount(total, decimals),
      networks: entries.map((e) => ({
        network: e.network,
        internalTicker: e.internalTicker,
        available: formatAmount(balances.get(e.ticker) ?? 0n, e.decimals),
      })),
    };
  });
}
