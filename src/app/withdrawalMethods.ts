// Add a withdrawal method (the operator API and the dashboard): the merchant, the catalog currency, the address of its network, the bound of methods.

import { symbolOf } from "../domain/currencies.ts";
import { checkPayoutDestination } from "../domain/evmAddress.ts";
import { invariantViolation } from "../domain/result.ts";
import { coolingOffEnd } from "../domain/withdrawalMethod.ts";
import { listCurrencies, resolveCurrencyName } from "../store/currencies.ts";
import {
  countWithdrawalMethodsLocked,
  findMerchant,
  insertWithdrawalMethod,
  type NewWithdrawalMethod,
  WITHDRAWAL_METHODS_PER_MERCHANT,
  type WithdrawalMethod,
} from "../store/merchants.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";
import { type ScreeningRefusal, screenDestination } from "./screenDestination.ts";

/**
 * Adds a withdrawal method, for the operator API and the dashboard alike: its address screened
 * first, outside any transaction (product §21), then the method's rules and `alsoInTx` (the
 * dashboard's audit record) in one transaction. A method added in the dashboard takes withdrawals
 * after the operator's cooling-off; one the operator adds at once (product §14). Answered as both
 * surfaces answer a method (answerMethod).
 */
export async function addWithdrawalMethod(
  ctx: ServiceContext,
  fields: Omit<NewWithdrawalMethod, "usableFrom">,
  alsoInTx?: (tx: Tx, method: WithdrawalMethod) => Promise<unknown>,
): Promise<Outcome<WithdrawalMethodAnswer, AddMethodRefusal>> {
  const screened = await screenDestination(ctx, fields.address);
  if (screened !== null) return { ok: false, refusal: screened };
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const now = nowIso();
      const usableFrom =
        fields.addedBy === "dashboard" ? coolingOffEnd(Date.parse(now), ctx.config.withdrawalMethodCoolingOffMs) : null;
      const added = await insertCheckedMethod(ctx, tx, { ...fields, usableFrom }, now);
      await alsoInTx?.(tx, added);
      return answerMethod(tx, added);
    }),
  );
}

/** What adding a withdrawal method refuses. */
export type AddMethodRefusal =
  | "merchant_not_found"
  | "ambiguous_currency"
  | "unknown_currency"
  | "invalid_address"
  | "withdrawal_method_limit_reached"
  | ScreeningRefusal["code"];

/**
 * A withdrawal method's rules and its row: the merchant exists, the currency is in the catalog, the address is one of the currency's network (product §12: in live
 * mode, where a mistyped address would lose money, and always for a method added in the dashboard;
 * sandbox payouts never use an operator's address), stored checksummed, and the merchant stays
 * within its bound of methods.
 */
async function insertCheckedMethod(
  ctx: ServiceContext,
  tx: Tx,
  fields: NewWithdrawalMethod,
  now: string,
): Promise<WithdrawalMethod> {
  if (!(await findMerchant(tx, fields.merchantId)))
    refuse("merchant_not_found", "No merchant with this id.", "/", null);
  // A method belongs to one entry: an internalTicker, or a ticker with one entry (product §23).
  const named = await resolveCurrencyName(tx, fields.currency);
  if (named !== null && named.restricted === null && named.entries.length > 1) {
    const detail = `${fields.currency} has several networks: name one by its internalTicker.`;
    refuse("ambiguous_currency", detail, "/currency", "names several entries");
  }
  const currency = named === null ? null : (named.restricted ?? named.primary);
  if (!currency) {
    return refuse("unknown_currency", `Unknown currency ${fields.currency}.`, "/currency", "is not a catalog ticker");
  }
  let address = fields.address;
  if (ctx.config.serviceMode === "live" || fields.addedBy === "dashboard") {
    const checked = checkPayoutDestination(currency, address.trim());
    if (!checked.ok) {
      const detail = `The address is not a valid ${currency.network} address: ${checked.detail}.`;
      refuse("invalid_address", detail, "/address", checked.detail ?? "is not a valid address");
    }
    address = checked.value;
  }
  if ((await countWithdrawalMethodsLocked(tx, fields.merchantId)) >= WITHDRAWAL_METHODS_PER_MERCHANT) {
    const detail = `A merchant has at most ${WITHDRAWAL_METHODS_PER_MERCHANT} withdrawal methods.`;
    refuse("withdrawal_method_limit_reached", detail, "/", null);
  }
  return insertWithdrawalMethod(tx, { ...fields, currency: currency.ticker, address }, now);
}
/** A withdrawal method as the operator API and the dashboard answer it: its entry's ticker, internalTicker and network. */
export interface WithdrawalMethodAnswer extends WithdrawalMethod {
  internalTicker: string;
  network: string;
}

/**
 * Methods as answered (product §23): `currency` the ticker, as balances answer it, beside the
 * entry's `internalTicker` and `network` (a method stores its entry's key, `USDT_BASE`).
 */
export async function answerMethods(tx: Tx, methods: readonly WithdrawalMethod[]): Promise<WithdrawalMethodAnswer[]> {
  const catalog = new Map((await listCurrencies(tx)).map((c) => [c.ticker, c]));
  return methods.map((method) => {
    const entry = catalog.get(method.currency);
    // An entry is never deleted; a method's key without one answers as stored.
    return entry === undefined
      ? { ...method, internalTicker: method.currency, network: "" }
      : { ...method, currency: symbolOf(entry), internalTicker: entry.internalTicker, network: entry.network };
  });
}

/** One method as answered (answerMethods). */
export async function answerMethod(tx: Tx, method: WithdrawalMethod): Promise<WithdrawalMethodAnswer> {
  const [answer] = await answerMethods(tx, [method]);
  if (answer === undefined) throw invariantViolation("one method answers one answer");
  return answer;
}
