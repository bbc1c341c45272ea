// CreateWithdrawal business rules 1–3 of the interface (method, merchant, limits), as a pure decision over what the store read.
import type { Currency } from "./currencies.ts";
import { type AmountError, formatAmount, parseAmount } from "./money.ts";
import { err, ok, type Result } from "./result.ts";

export type WithdrawalRefusal =
  | "withdrawal_method_not_found"
  | "withdrawal_method_disabled"
  | "withdrawal_method_cooling_off"
  | "withdrawal_method_currency_mismatch"
  | "merchant_not_active"
  | "unknown_currency"
  | AmountError
  | "amount_below_minimum"
  | "amount_above_maximum";

export interface WithdrawalFacts {
  merchantId: string;
  /** The merchant's status; only `active` merchants are operational. */
  merchantStatus: string;
  /** The method the body names, or null when there is none with that id. */
  method: { merchantId: string; currency: string; disabledAt: string | null; usableFrom: string | null } | null;
  /** Now, ISO-8601 UTC: a method in its cooling-off takes no withdrawal yet. */
  now: string;
  requestedCurrency: string;
  /** The catalog entry of the requested currency, or null when it is not in the catalog. */
  currency: Currency | null;
  /** The body's amount: a decimal string or a JSON number. */
  amount: unknown;
}

/** Which body field a refusal is about, as a JSON Pointer. */
export const REFUSAL_POINTER: Record<WithdrawalRefusal, string> = {
  withdrawal_method_not_found: "/withdrawalMethodId",
  withdrawal_method_disabled: "/withdrawalMethodId",
  withdrawal_method_cooling_off: "/withdrawalMethodId",
  withdrawal_method_currency_mismatch: "/currency",
  merchant_not_active: "/",
  unknown_currency: "/currency",
  invalid_amount: "/amount",
  amount_not_positive: "/amount",
  amount_too_precise: "/amount",
  amount_below_minimum: "/amount",
  amount_above_maximum: "/amount",
};

/**
 * Rules in the interface's order: the method (owned by the merchant, enabled, past its cooling-off
 * (product §14), same currency), the merchant
 * operational, the amount within the currency's limits. Rule 4, the balance, is the ledger's:
 * only the balance row locked in the accepting transaction can answer it under concurrency.
 * Another merchant's method answers exactly as an unknown one, so ids reveal nothing.
 */
export function checkWithdrawal(facts: WithdrawalFacts): Result<{ amountMinor: bigint }, WithdrawalRefusal> {
  if (facts.method === null || facts.method.merchantId !== facts.merchantId) {
    return err("withdrawal_method_not_found", "No withdrawal method with this id belongs to your account.");
  }
  if (facts.method.disabledAt !== null) {
    return err("withdrawal_method_disabled", "This withdrawal method is disabled; it takes no new withdrawals.");
  }
  if (facts.method.usableFrom !== null && facts.now < facts.method.usableFrom) {
    return err(
      "withdrawal_method_cooling_off",
      `This withdrawal method was added recently and takes withdrawals from ${facts.method.usableFrom}.`,
    );
  }
  if (facts.method.currency !== facts.requestedCurrency) {
    return err(
      "withdrawal_method_currency_mismatch",
      `The withdrawal method pays out ${facts.method.currency}, not the requested currency.`,
    );
  }
  if (facts.merchantStatus !== "active") {
    return err("merchant_not_active", "The merchant account is not active; withdrawals are not possible.");
  }
  const currency = facts.currency;
  if (currency === null) return err("unknown_currency", "The currency is not in the catalog.");
  const amount = parseAmount(facts.amount, currency.decimals);
  if (!amount.ok) {
    const detail: Record<AmountError, string> = {
      invalid_amount: 'amount must be a plain decimal string such as "100.5" (or a JSON number).',
      amount_not_positive: "amount must be positive.",
      amount_too_precise: `amount has more fraction digits than ${currency.ticker} has (${currency.decimals}).`,
    };
    return err(amount.error, detail[amount.error]);
  }
  if (amount.value < currency.withdrawalMinMinor) {
    return err(
      "amount_below_minimum",
      `amount is below the ${currency.ticker} withdrawal minimum of ${formatAmount(currency.withdrawalMinMinor, currency.decimals)}.`,
    );
  }
  if (amount.value > currency.withdrawalMaxMinor) {
    return err(
      "amount_above_maximum",
      `amount is above the ${currency.ticker} withdrawal maximum of ${formatAmount(currency.withdrawalMaxMinor, currency.decimals)}.`,
    );
  }
  return ok({ amountMinor: amount.value });
}

export interface WithdrawalPricing {
  /** What the balance is debited. */
  debitMinor: bigint;
  /** What the service charges for the withdrawal. */
  feeMinor: bigint;
  /** What the withdrawal method receives. */
  receiveMinor: bigint;
}

/**
 * What an accepted withdrawal of `amountMinor` debits, charges and delivers. The merchant is
 * debited the amount and the method receives all of it: the network's gas is the operator's own
 * expense (docs/evm-payouts.md, "Fees and the ledger"), and the fee plan of product §4 prices
 * invoices only. Both the dashboard's review and its answer come from here.
 */
export function withdrawalPricing(amountMinor: bigint): WithdrawalPricing {
  const feeMinor = 0n;
  return { debitMinor: amountMinor, feeMinor, receiveMinor: amountMinor - feeMinor };
}
