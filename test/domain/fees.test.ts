// Fee plan properties (product §4): exact sums, half-up rounding, and estimate/invoice agreement to the last digit.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_CATALOG } from "../../src/domain/currencies.ts";
import { type FeePlan, feeEstimate, priceInvoice } from "../../src/domain/fees.ts";
import { type Decimal, formatAmount, numberToPlainDecimal, parseAmount } from "../../src/domain/money.ts";

/** Catalog amounts in minor units; "0" (fiat network fees) is refused by parseAmount as not positive. */
function minor(text: string, decimals: number): bigint {
  const parsed = parseAmount(text, decimals);
  return parsed.ok ? parsed.value : 0n;
}

const currencies = DEFAULT_CATALOG.map((c) => ({
  ticker: c.ticker,
  decimals: c.decimals,
  networkFeeMinor: minor(c.networkFee, c.decimals),
}));

/** A fee percent from 0 to 100 with up to 8 fraction digits, as merchants may be configured. */
const feePercent: fc.Arbitrary<Decimal> = fc
  .tuple(fc.integer({ min: 0, max: 8 }), fc.bigInt({ min: 0n, max: 100n * 10n ** 8n }))
  .map(([scale, raw]) => {
    const max = 100n * 10n ** BigInt(scale);
    return { units: raw % (max + 1n), scale };
  });

const plan: fc.Arbitrary<FeePlan> = fc.record({
  feePercent,
  feesPaidBy: fc.constantFrom("merchant" as const, "payer" as const),
});

const currency = fc.constantFrom(...currencies);
const amount = fc.bigInt({ min: 1n, max: 10n ** 30n });

describe("priceInvoice", () => {
  it("adds up exactly under both feesPaidBy settings", () => {
    fc.assert(
      fc.property(amount, currency, plan, (a, c, p) => {
        const priced = priceInvoice(a, c, p);
        if (!priced.ok) {
          // Refused only when the merchant would receive nothing.
          expect(p.feesPaidBy).toBe("merchant");
          return;
        }
        const r = priced.value;
        expect(r.amount).toBe(a);
        expect(r.networkAndOtherFees).toBe(c.networkFeeMinor);
        if (p.feesPaidBy === "merchant") {
          expect(r.finalAmount).toBe(a);
          expect(r.merchantReceiveAmount + r.merchantFee + r.networkAndOtherFees).toBe(r.finalAmount);
        } else {
          expect(r.merchantReceiveAmount).toBe(a);
          expect(r.finalAmount).toBe(a + r.merchantFee + r.networkAndOtherFees);
        }
        expect(r.finalAmount - r.merchantFee - r.networkAndOtherFees).toBe(
          p.feesPaidBy === "merchant" ? r.merchantReceiveAmount : a,
        );
        expect(r.merchantReceiveAmount > 0n).toBe(true);
      }),
    );
  });

  it("rounds the merchant fee half up to the currency's minor unit", () => {
    fc.assert(
      fc.property(amount, currency, plan, (a, c, p) => {
        const priced = priceInvoice(a, c, { ...p, feesPaidBy: "payer" });
        expect(priced.ok).toBe(true);
        if (!priced.ok) return;
        const fee = priced.value.merchantFee;
        // Exact value is a * units / d, with d = 100 * 10^scale; half up means fee - 1/2 <= exact < fee + 1/2.
        const d = 100n * 10n ** BigInt(p.feePercent.scale);
        const twiceExact = 2n * a * p.feePercent.units;
        expect(2n * fee * d - d <= twiceExact).toBe(true);
        expect(twiceExact < 2n * fee * d + d).toBe(true);
      }),
    );
  });

  it("refuses exactly when merchant_receive_amount would not be positive", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 8n }), currency, plan, (a, c, p) => {
        const priced = priceInvoice(a, c, { ...p, feesPaidBy: "merchant" });
        const fee = priceInvoice(a, c, { ...p, feesPaidBy: "payer" });
        if (!fee.ok) throw new Error("payer-paid pricing always succeeds");
        const receive = a - fee.value.merchantFee - fee.value.networkAndOtherFees;
        expect(priced.ok).toBe(receive > 0n);
        if (!priced.ok) expect(priced.error).toBe("merchant_receive_amount_not_positive");
      }),
    );
  });

  it("matches worked examples", () => {
    const usdt = currencies.find((c) => c.ticker === "USDT")!;
    const eur = currencies.find((c) => c.ticker === "EUR")!;
    const p = (units: bigint, scale: number, feesPaidBy: "merchant" | "payer") => ({
      feePercent: { units, scale },
      feesPaidBy,
    });
    // 100 USDT at 2.5%: fee 2.5, network 1.
    expect(priceInvoice(100_000000n, usdt, p(25n, 1, "merchant"))).toEqual({
      ok: true,
      value: {
        amount: 100_000000n,
        merchantFee: 2_500000n,
        networkAndOtherFees: 1_000000n,
        finalAmount: 100_000000n,
        merchantReceiveAmount: 96_500000n,
      },
    });
    expect(priceInvoice(100_000000n, usdt, p(25n, 1, "payer"))).toMatchObject({
      value: { finalAmount: 103_500000n, merchantReceiveAmount: 100_000000n },
    });
    // 0.50 EUR at 1% is 0.005: half up gives 0.01; 0.49 EUR gives 0.0049: 0.00.
    expect(priceInvoice(50n, eur, p(1n, 0, "merchant"))).toMatchObject({ value: { merchantFee: 1n } });
    expect(priceInvoice(49n, eur, p(1n, 0, "merchant"))).toMatchObject({ value: { merchantFee: 0n } });
    // 1 USDT with a 1 USDT network fee leaves nothing when the merchant pays.
    expect(priceInvoice(1_000000n, usdt, p(1n, 0, "merchant")).ok).toBe(false);
  });
});

describe("feeEstimate", () => {
  it("agrees with the invoice amounts to the last digit", () => {
    fc.assert(
      fc.property(amount, currency, plan, (a, c, p) => {
        const priced = priceInvoice(a, c, p);
        if (!priced.ok) return;
        const r = priced.value;
        const e = feeEstimate(r, c.decimals);
        const pairs: [number, bigint][] = [
          [e.amount, r.amount],
          [e.finalPrice, r.finalAmount],
          [e.fee, r.merchantFee],
          [e.summaryFee, r.merchantFee + r.networkAndOtherFees],
          [e.merchantReceiveAmount, r.merchantReceiveAmount],
        ];
        for (const [estimate, minor] of pairs) {
          const invoiceString = formatAmount(minor, c.decimals);
          // The estimate is the nearest double of the invoice's exact decimal ...
          expect(estimate).toBe(Number(invoiceString));
          // ... and when a double holds every digit, it reads back as exactly that decimal.
          const significant = invoiceString.replace(".", "").replace(/^0+/, "").length;
          if (significant <= 15) expect(numberToPlainDecimal(estimate)).toBe(invoiceString);
        }
      }),
    );
  });

  it("agrees digit for digit for every amount a double can carry", () => {
    // Amounts a client sends as JSON numbers: up to 15 significant digits.
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 12n }), currency, plan, (a, c, p) => {
        const priced = priceInvoice(a, c, p);
        if (!priced.ok) return;
        const e = feeEstimate(priced.value, c.decimals);
        expect(numberToPlainDecimal(e.amount)).toBe(formatAmount(a, c.decimals));
        expect(parseAmount(e.amount, c.decimals)).toEqual({ ok: true, value: a });
      }),
    );
  });
});
