// Rates (product §22): a feed's round becomes an exact decimal with the feed's precision, or is refused; conversion at such rates rounds once, half up.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { convert, formatDecimal } from "../../src/domain/money.ts";
import {
  atQuotedRate,
  parseQuoteRates,
  parseRateSource,
  paymentValue,
  rateOfRound,
  serializeQuoteRates,
  serializeRateSource,
  usdValueMinor,
} from "../../src/domain/rates.ts";

const NOW = 1_800_000_000;

describe("rateOfRound", () => {
  it("keeps the answer exactly, with the feed's decimals", () => {
    const rate = rateOfRound({ answer: 301_234_567_890n, decimals: 8, updatedAt: BigInt(NOW - 30) }, NOW, 3600);
    expect(rate.ok && formatDecimal(rate.value)).toBe("3012.3456789");
    expect(rate.ok && rate.value).toEqual({ units: 301_234_567_890n, scale: 8 });
  });

  it("refuses a round older than maxAgeSeconds, and takes one exactly at the bound", () => {
    expect(rateOfRound({ answer: 1n, decimals: 0, updatedAt: BigInt(NOW - 3601) }, NOW, 3600)).toMatchObject({
      ok: false,
      error: "rate_stale",
    });
    expect(rateOfRound({ answer: 1n, decimals: 0, updatedAt: BigInt(NOW - 3600) }, NOW, 3600).ok).toBe(true);
    // A round stamped ahead of this clock is fresh.
    expect(rateOfRound({ answer: 1n, decimals: 0, updatedAt: BigInt(NOW + 60) }, NOW, 3600).ok).toBe(true);
  });

  it.each([0n, -1n, -300_000_000_000n])("refuses an answer of %s", (answer) => {
    expect(rateOfRound({ answer, decimals: 8, updatedAt: BigInt(NOW) }, NOW, 3600)).toMatchObject({
      ok: false,
      error: "rate_not_positive",
    });
  });

  it("refuses absurd decimals", () => {
    expect(rateOfRound({ answer: 1n, decimals: 77, updatedAt: BigInt(NOW) }, NOW, 3600)).toMatchObject({
      ok: false,
      error: "rate_decimals_invalid",
    });
  });

  it("property: any positive fresh answer is the rate answer / 10^decimals, digit for digit", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 40n }), fc.integer({ min: 0, max: 36 }), (answer, decimals) => {
        const rate = rateOfRound({ answer, decimals, updatedAt: BigInt(NOW) }, NOW, 60);
        expect(rate.ok).toBe(true);
        if (!rate.ok) return;
        const text = formatDecimal(rate.value);
        const digits = answer.toString().padStart(decimals + 1, "0");
        const expected = `${digits.slice(0, digits.length - decimals)}.${digits.slice(digits.length - decimals)}`
          .replace(/\.?0+$/, "")
          .replace(/^$/, "0");
        expect(text).toBe(decimals === 0 ? answer.toString() : expected);
      }),
    );
  });
});

/** The exact value of a conversion as a fraction: amount × fromRate / toRate, in target minor units. */
function exactConversion(
  amount: bigint,
  from: { decimals: number; rate: bigint; rateScale: number },
  to: { decimals: number; rate: bigint; rateScale: number },
) {
  return {
    numerator: amount * from.rate * 10n ** BigInt(to.rateScale + to.decimals),
    denominator: to.rate * 10n ** BigInt(from.rateScale + from.decimals),
  };
}

const side = fc.record({
  decimals: fc.integer({ min: 0, max: 18 }),
  rate: fc.bigInt({ min: 1n, max: 10n ** 24n }),
  rateScale: fc.integer({ min: 0, max: 18 }),
});

describe("conversion at feed rates", () => {
  it("property: rounds once, half up, to the target's decimals", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 30n }), side, side, (amount, from, to) => {
        const result = convert(
          amount,
          { decimals: from.decimals, rateUsd: { units: from.rate, scale: from.rateScale } },
          { decimals: to.decimals, rateUsd: { units: to.rate, scale: to.rateScale } },
        );
        const { numerator, denominator } = exactConversion(amount, from, to);
        // Half up: result - 1/2 <= exact < result + 1/2, i.e. 2·(result·d) - d <= 2n < 2·(result·d) + d.
        expect(2n * result * denominator - denominator <= 2n * numerator).toBe(true);
        expect(2n * numerator < 2n * result * denominator + denominator).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("property: a USD value rounds once, half up, to cents", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 30n }),
        fc.integer({ min: 0, max: 18 }),
        side,
        (amount, decimals, rate) => {
          const cents = usdValueMinor(amount, decimals, { units: rate.rate, scale: rate.rateScale });
          const numerator = amount * rate.rate * 100n;
          const denominator = 10n ** BigInt(decimals + rate.rateScale);
          expect(2n * cents * denominator - denominator <= 2n * numerator).toBe(true);
          expect(2n * numerator < 2n * cents * denominator + denominator).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("rounds a half cent up, and below a half down", () => {
    // 0.005 USDT at 1 = half a cent: up; 0.004999 = down.
    expect(usdValueMinor(5_000n, 6, { units: 1n, scale: 0 })).toBe(1n);
    expect(usdValueMinor(4_999n, 6, { units: 1n, scale: 0 })).toBe(0n);
    // 1 ETH at 3012.34567890 (8 decimals) = 3012.35.
    expect(usdValueMinor(10n ** 18n, 18, { units: 301_234_567_890n, scale: 8 })).toBe(301_235n);
  });

  it("values a payment at the fixed rate, and at the live one beside it when known", () => {
    const fixed = { units: 3000n, scale: 0 };
    expect(paymentValue(5n * 10n ** 17n, 18, fixed, { units: 3100n, scale: 0 })).toEqual({
      valueUsdMinor: 150_000n,
      liveRateUsd: { units: 3100n, scale: 0 },
      liveValueUsdMinor: 155_000n,
    });
    expect(paymentValue(1n, 18, fixed, null).liveValueUsdMinor).toBeNull();
  });
});

describe("quotes and sources", () => {
  it("an invoice's currencies convert at the quoted rates; without a quote, at the catalog's", () => {
    const eth = { ticker: "ETH", rateUsd: { units: 3000n, scale: 0 }, decimals: 18 };
    const quote = [
      { ticker: "ETH", rateUsd: { units: 250_012n, scale: 2 }, source: "chainlink" as const, updatedAt: null },
    ];
    expect(atQuotedRate(eth, quote).rateUsd).toEqual({ units: 250_012n, scale: 2 });
    expect(atQuotedRate(eth, null)).toBe(eth);
    expect(atQuotedRate(eth, [])).toBe(eth);
  });

  it("property: quote rates and sources survive their stored form", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            ticker: fc.stringMatching(/^[A-Z0-9]{2,20}$/),
            units: fc.bigInt({ min: 1n, max: 10n ** 40n }),
            scale: fc.integer({ min: 0, max: 36 }),
            source: fc.constantFrom("static" as const, "chainlink" as const),
          }),
          { maxLength: 2 },
        ),
        (list) => {
          const rates = list.map((r) => ({
            ticker: r.ticker,
            rateUsd: { units: r.units, scale: r.scale },
            source: r.source,
            updatedAt: r.source === "static" ? null : "2026-01-01T00:00:00.000Z",
          }));
          const back = parseQuoteRates(serializeQuoteRates(rates));
          expect(back.map((r) => formatDecimal(r.rateUsd))).toEqual(rates.map((r) => formatDecimal(r.rateUsd)));
          expect(back.map((r) => r.ticker)).toEqual(rates.map((r) => r.ticker));
        },
      ),
    );
    const chainlink = { kind: "chainlink" as const, network: "ethereum", feed: "0xabc", maxAgeSeconds: 3600 };
    expect(parseRateSource(serializeRateSource(chainlink))).toEqual(chainlink);
    expect(serializeRateSource({ kind: "static" })).toBeNull();
    expect(parseRateSource(null)).toEqual({ kind: "static" });
  });
});
