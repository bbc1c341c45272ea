// One currency on several networks (product §23), the pure rules: pricing over the entries offered, precision and dust, the completion split per entry.
import { describe, expect, it } from "vitest";
import {
  type Currency,
  countedAtPrecision,
  countedForInvoice,
  inUnitsOf,
  precisionOf,
  pricedOver,
  rescaleHalfUp,
} from "../../src/domain/currencies.ts";
import { parseDecimal } from "../../src/domain/money.ts";
import { chainIdOf } from "../../src/domain/paymentUri.ts";
import { splitCompletionMovement } from "../../src/domain/settlement.ts";

function entry(ticker: string, decimals: number, networkFeeMinor: bigint): Currency {
  const rateUsd = parseDecimal("1");
  if (rateUsd === null) throw new Error("rate");
  return {
    ticker,
    fullName: "Tether USD",
    network: ticker === "USDT" ? "ethereum" : "base",
    contractAddress: null,
    type: "stablecoin",
    icon: "",
    iconDark: "",
    internalTicker: ticker,
    decimals,
    networkFeeMinor,
    withdrawalMinMinor: 1n,
    withdrawalMaxMinor: 10n ** 30n,
    rateUsd,
    symbol: "USDT",
  };
}

describe("a currency's entries", () => {
  it("price with the highest network fee among the entries offered, in the first entry's precision", () => {
    const first = entry("USDT", 6, 1_000_000n);
    const base = entry("USDT_BASE", 18, 2_500_000_000_000_000_000n);
    expect(pricedOver(first, [first, base]).networkFeeMinor).toBe(2_500_000n);
    expect(pricedOver(first, [first]).networkFeeMinor).toBe(1_000_000n);
    expect(pricedOver(first, [base]).decimals).toBe(6);
    expect(rescaleHalfUp(1_500_000_000_000n, 18, 6)).toBe(2n);
    expect(rescaleHalfUp(1_499_999_999_999n, 18, 6)).toBe(1n);
  });

  it("take the smallest decimals of the entries as the precision, also when the first entry has more", () => {
    const first = entry("USDT", 18, 10n ** 18n);
    const six = entry("USDT_BASE", 6, 1_500_000n);
    expect(precisionOf([first, six])).toBe(6);
    // The fee at the precision, kept in the first entry's units (a multiple of the precision's unit).
    expect(pricedOver(first, [first, six], 6).networkFeeMinor).toBe(1_500_000n * 10n ** 12n);
    expect(inUnitsOf(5_000_000n * 10n ** 12n, 18, 6)).toBe(5_000_000n);
    expect(inUnitsOf(5_000_000n, 6, 18)).toBe(5n * 10n ** 18n);
    // 10.1234567890123 on the 18-decimal entry: 10.123456 counted (in the invoice's 18-decimal units), the rest dust.
    expect(countedForInvoice(10_123_456_789_012_300_000n, 18, 6, 18)).toEqual({
      counted: 10_123_456n * 10n ** 12n,
      dust: 789_012_300_000n,
    });
    expect(countedForInvoice(5_000_000n, 6, 6, 18)).toEqual({ counted: 5n * 10n ** 18n, dust: 0n });
  });

  it("count a payment to the currency's precision, the rest dust", () => {
    expect(countedAtPrecision(10n * 10n ** 18n + 123n, 18, 6)).toEqual({ counted: 10_000_000n, dust: 123n });
    expect(countedAtPrecision(5_000_000n, 6, 6)).toEqual({ counted: 5_000_000n, dust: 0n });
  });

  it("credit a completion per entry, the fees from the largest share, each in its own units", () => {
    const completion = splitCompletionMovement(
      {
        invoiceId: "i",
        merchantId: "m",
        currency: entry("USDT", 6, 0n),
        settlement: entry("USDT", 6, 0n),
        finalAmountMinor: 10_000_000n,
        merchantFeeMinor: 100_000n,
        networkAndOtherFeesMinor: 2_000_000n,
        merchantReceiveAmountMinor: 7_900_000n,
        settledMinor: 10_000_000n,
      },
      [
        { entry: { ticker: "USDT", decimals: 6 }, settledMinor: 4_000_000n },
        { entry: { ticker: "USDT_BASE", decimals: 18 }, settledMinor: 6_000_000n },
      ],
      6,
    );
    expect(completion.creditMinor).toBe(7_900_000n);
    const merchant = completion.movement.postings.filter((p) => p.account === "merchant:m");
    expect(merchant.map((p) => [p.currency, p.amount])).toEqual([
      ["USDT_BASE", 3_900_000n * 10n ** 12n],
      ["USDT", 4_000_000n],
    ]);
  });

  it("know Base's chain ids", () => {
    expect([chainIdOf("base", false), chainIdOf("base", true)]).toEqual([8453, 84532]);
  });
});
