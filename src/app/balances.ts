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
