// Money parsing, formatting and rounding: exact, and round-tripping for any valid amount.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  convert,
  divideHalfUp,
  formatAmount,
  numberToPlainDecimal,
  parseAmount,
  parseDecimal,
  parseSignedAmount,
  percentOf,
} from "../../src/domain/money.ts";

describe("parseAmount", () => {
  it.each([
    ["100", 2, 10000n],
    ["100.50", 2, 10050n],
    ["0.5", 2, 50n],
    ["0.000001", 6, 1n],
    ["1.000000000000000001", 18, 1000000000000000001n],
  ])("reads %s with %i decimals", (input, decimals, expected) => {
    expect(parseAmount(input, decimals)).toEqual({ ok: true, value: expected });
  });

  it.each([
    [100, 2, 10000n],
    [100.5, 2, 10050n],
    [0.1, 6, 100000n],
    [1e-7, 18, 100000000000n],
    [1e21, 0, 10n ** 21n],
  ])("reads the number %d through its shortest round-trip form", (input, decimals, expected) => {
    expect(parseAmount(input, decimals)).toEqual({ ok: true, value: expected });
  });

  it.each([
    ["1e5", "invalid_amount"],
    ["01", "invalid_amount"],
    [" 1", "invalid_amount"],
    ["1.", "invalid_amount"],
    [".5", "invalid_amount"],
    ["+1", "invalid_amount"],
    ["abc", "invalid_amount"],
    ["", "invalid_amount"],
    // At most 30 integer digits (MAX_INTEGER_DIGITS): far beyond any real amount, bounded all the same.
    [`1${"0".repeat(30)}`, "invalid_amount"],
    ["0", "amount_not_positive"],
    ["0.00", "amount_not_positive"],
    ["-1", "amount_not_positive"],
    ["1.001", "amount_too_precise"],
    [0, "amount_not_positive"],
    [-5, "amount_not_positive"],
    [0.001, "amount_too_precise"],
    [Number.NaN, "invalid_amount"],
    [Number.POSITIVE_INFINITY, "invalid_amount"],
    [null, "invalid_amount"],
    [true, "invalid_amount"],
  ])("refuses %j with %s", (input, code) => {
    const result = parseAmount(input, 2);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toBe(code);
  });

  it("reads signed adjustments", () => {
    expect(parseSignedAmount("-1.5", 2)).toEqual({ ok: true, value: -150n });
    expect(parseSignedAmount("--1", 2).ok).toBe(false);
    expect(parseSignedAmount("-0", 2).ok).toBe(false);
  });
});

describe("formatAmount", () => {
  it.each([
    [10000n, 2, "100"],
    [10050n, 2, "100.5"],
    [1n, 6, "0.000001"],
    [0n, 2, "0"],
    [-150n, 2, "-1.5"],
    [5n, 0, "5"],
  ])("formats %s with %i decimals as %s", (minor, decimals, text) => {
    expect(formatAmount(minor, decimals)).toBe(text);
  });

  it("round-trips every positive amount at every precision", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 30n - 1n }), fc.integer({ min: 0, max: 18 }), (minor, decimals) => {
        const text = formatAmount(minor, decimals);
        expect(text).toMatch(/^(0|[1-9]\d*)(\.\d*[1-9])?$/);
        expect(parseAmount(text, decimals)).toEqual({ ok: true, value: minor });
      }),
    );
  });

  it("writes any finite double without an exponent, and reads it back to the same double", () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        const text = numberToPlainDecimal(value);
        expect(text).not.toMatch(/e/i);
        expect(Number(text)).toBe(value === 0 ? 0 : value);
      }),
    );
  });
});

describe("rounding", () => {
  it("rounds half up", () => {
    expect(divideHalfUp(5n, 10n)).toBe(1n);
    expect(divideHalfUp(4n, 10n)).toBe(0n);
    expect(divideHalfUp(15n, 10n)).toBe(2n);
    expect(divideHalfUp(-15n, 10n)).toBe(-2n);
  });

  it("never differs from the exact quotient by more than one half", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.bigInt({ min: 1n, max: 10n ** 20n }), (n, d) => {
        const q = divideHalfUp(n, d);
        // |q - n/d| <= 1/2  <=>  |2qd - 2n| <= d, and exact halves go up.
        const gap = 2n * q * d - 2n * n;
        expect(gap <= d && gap > -d).toBe(true);
      }),
    );
  });

  it("takes percents exactly", () => {
    const onePercent = parseDecimal("1")!;
    expect(percentOf(10000n, onePercent)).toBe(100n);
    expect(percentOf(50n, onePercent)).toBe(1n); // 0.5 minor units rounds up
    expect(percentOf(49n, onePercent)).toBe(0n);
    expect(percentOf(12345n, parseDecimal("2.5")!)).toBe(309n); // 308.625
  });

  it("converts through USD rates, half up to the target's decimals", () => {
    const eur = { decimals: 2, rateUsd: parseDecimal("1.08")! };
    const usdt = { decimals: 6, rateUsd: parseDecimal("1")! };
    const eth = { decimals: 18, rateUsd: parseDecimal("3000")! };
    expect(convert(10000n, eur, usdt)).toBe(108000000n); // 100 EUR = 108 USDT
    expect(convert(10n ** 18n, eth, eur)).toBe(277778n); // 1 ETH = 2777.777.. EUR
    expect(convert(108000000n, usdt, eur)).toBe(10000n);
  });
});
