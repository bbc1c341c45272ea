// The fee plan of product §4: what an invoice charges the payer and credits the merchant, exactly, with no I/O.
import { type Decimal, formatAmount, percentOf } from "./money.ts";
import { err, ok, type Result } from "./result.ts";

export type FeesPaidBy = "merchant" | "payer";

export interface FeePlan {
  /** 0 to 100. */
  readonly feePercent: Decimal;
  readonly feesPaidBy: FeesPaidBy;
}

/** An invoice's amounts in minor units of its currency. */
export interface InvoicePricing {
  readonly amount: bigint;
  readonly merchantFee: bigint;
  readonly networkAndOtherFees: bigint;
  readonly finalAmount: bigint;
  readonly merchantReceiveAmount: bigint;
}

/**
 * Prices an invoice of `amount` minor units: the merchant fee rounds half up to the currency's
 * minor unit, the network fee is the catalog's. Who pays the fees decides whether they are
 * added to what the payer pays or taken from what the merchant receives.
 */
export function priceInvoice(
  amount: bigint,
  currency: { readonly networkFeeMinor: bigint },
  plan: FeePlan,
): Result<InvoicePricing, "merchant_receive_amount_not_positive"> {
  const merchantFee = percentOf(amount, plan.feePercent);
  const networkAndOtherFees = currency.networkFeeMinor;
  const fees = merchantFee + networkAndOtherFees;
  const pricing =
    plan.feesPaidBy === "payer"
      ? { amount, merchantFee, networkAndOtherFees, finalAmount: amount + fees, merchantReceiveAmount: amount }
      : { amount, merchantFee, networkAndOtherFees, finalAmount: amount, merchantReceiveAmount: amount - fees };
  if (pricing.merchantReceiveAmount <= 0n) {
    return err(
      "merchant_receive_amount_not_positive",
      `fees of ${fees} minor units leave nothing for the merchant out of ${amount}`,
    );
  }
  return ok(pricing);
}

/** CalculatedInvoiceFeeResult: the pricing as JSON numbers (nearest doubles of the exact decimals). */
export interface FeeEstimate {
  amount: number;
  finalPrice: number;
  fee: number;
  summaryFee: number;
  merchantReceiveAmount: number;
}

export function feeEstimate(pricing: InvoicePricing, decimals: number): FeeEstimate {
  // Number() of the exact decimal string is the nearest double; arithmetic on doubles would not be.
  const n = (minor: bigint) => Number(formatAmount(minor, decimals));
  return {
    amount: n(pricing.amount),
    finalPrice: n(pricing.finalAmount),
    fee: n(pricing.merchantFee),
    summaryFee: n(pricing.merchantFee + pricing.networkAndOtherFees),
    merchantReceiveAmount: n(pricing.merchantReceiveAmount),
  };
}
