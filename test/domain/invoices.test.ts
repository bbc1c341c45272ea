// Creation rules: amount input codes, exact formatting round trips, expiry resolution, fingerprints and deposit addresses.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_EXPIRY_MS,
  MAX_EXPIRY_MS,
  parseInvoiceAmount,
  parseRfc3339,
  requestFingerprint,
  resolveExpiry,
  sandboxDepositAddress,
} from "../../src/domain/invoices.ts";
import { formatAmount, parseAmount } from "../../src/domain/money.ts";

describe("parseInvoiceAmount", () => {
  const cases: [number | string, number, string | bigint][] = [
    ["100", 6, 100_000000n],
    ["100.50", 6, 100_500000n],
    ["0.000001", 6, 1n],
    [100.5, 6, 100_500000n],
    [0.1, 2, 10n],
    [1e-7, 8, 10n],
    [1e21, 0, 10n ** 21n],
    ["1.1234567", 6, "amount_too_precise"],
    [0.001, 2, "amount_too_precise"],
    [1e-7, 6, "amount_too_precise"],
    ["0", 6, "amount_not_positive"],
    ["0.000", 6, "amount_not_positive"],
    [0, 6, "amount_not_positive"],
    ["-0", 6, "amount_not_positive"],
    [-0, 6, "amount_not_positive"],
    ["-5", 6, "amount_negative"],
    [-5, 6, "amount_negative"],
    ["-1.1234567", 6, "amount_negative"],
    ["1e5", 6, "amount_exponent_not_allowed"],
    ["1E-2", 6, "amount_exponent_not_allowed"],
    ["-2.5e3", 6, "amount_exponent_not_allowed"],
    ["abc", 6, "invalid_amount"],
    ["", 6, "invalid_amount"],
    ["01", 6, "invalid_amount"],
    [".5", 6, "invalid_amount"],
    ["5.", 6, "invalid_amount"],
    [" 5", 6, "invalid_amount"],
    ["+5", 6, "invalid_amount"],
    ["1,5", 6, "invalid_amount"],
    ["NaN", 6, "invalid_amount"],
    ["Infinity", 6, "invalid_amount"],
    ["0x10", 6, "invalid_amount"],
    ["1".repeat(31), 0, "invalid_amount"],
  ];
  it.each(cases)("%j with %i decimals -> %s", (input, decimals, expected) => {
    const parsed = parseInvoiceAmount(input, decimals);
    if (typeof expected === "bigint") expect(parsed).toEqual({ ok: true, value: expected });
    else {
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toBe(expected);
    }
  });

  /** Amounts the service accepts: at most 30 integer digits. */
  const acceptedMinor = (decimals: number) => fc.bigInt({ min: 1n, max: 10n ** BigInt(30 + decimals) - 1n });

  it("reads back every amount it formats: parse(format(x)) == x", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 18 }).chain((d) => fc.tuple(fc.constant(d), acceptedMinor(d))),
        ([decimals, minor]) => {
          const text = formatAmount(minor, decimals);
          expect(text).toMatch(/^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$/);
          expect(parseInvoiceAmount(text, decimals)).toEqual({ ok: true, value: minor });
        },
      ),
    );
  });

  it("formats an accepted input canonically: trailing zeros dropped, nothing rounded", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 18 }).chain((d) => fc.tuple(fc.constant(d), acceptedMinor(d))),
        fc.integer({ min: 0, max: 4 }),
        ([decimals, minor], extraZeros) => {
          const text = formatAmount(minor, decimals);
          const input = extraZeros === 0 ? text : `${text}${text.includes(".") ? "" : "."}${"0".repeat(extraZeros)}`;
          const parsed = parseInvoiceAmount(input, decimals);
          expect(parsed).toEqual({ ok: true, value: minor });
          if (parsed.ok) expect(formatAmount(parsed.value, decimals)).toBe(text);
        },
      ),
    );
  });

  it("reads JSON numbers through their shortest round-trip form", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 ** 9 }), fc.integer({ min: 0, max: 6 }), (units, scale) => {
        const value = units / 10 ** scale;
        const parsed = parseInvoiceAmount(value, 6);
        // String(value) is what a reader of the JSON text sees; that decimal, not the binary double, is parsed.
        expect(parsed).toEqual(parseAmount(String(value), 6));
      }),
    );
  });
});

describe("parseRfc3339", () => {
  it("reads offsets and fractions", () => {
    expect(parseRfc3339("2030-01-02T03:04:05Z")).toBe(Date.UTC(2030, 0, 2, 3, 4, 5));
    expect(parseRfc3339("2030-01-02T03:04:05.678Z")).toBe(Date.UTC(2030, 0, 2, 3, 4, 5, 678));
    expect(parseRfc3339("2030-01-02t03:04:05.6789z")).toBe(Date.UTC(2030, 0, 2, 3, 4, 5, 678));
    expect(parseRfc3339("2030-01-02T05:04:05+02:00")).toBe(Date.UTC(2030, 0, 2, 3, 4, 5));
    expect(parseRfc3339("2030-01-01T22:34:05-04:30")).toBe(Date.UTC(2030, 0, 2, 3, 4, 5));
    expect(parseRfc3339("2028-02-29T00:00:00Z")).toBe(Date.UTC(2028, 1, 29));
  });

  it.each([
    "2030-01-02T03:04:05",
    "2030-01-02 03:04:05Z",
    "2030-01-02",
    "2030-02-30T00:00:00Z",
    "2029-02-29T00:00:00Z",
    "2030-13-01T00:00:00Z",
    "2030-01-01T24:00:00Z",
    "2030-01-01T23:60:00Z",
    "2030-01-01T23:59:60Z",
    "2030-01-01T00:00:00+24:00",
    "2030-01-01T00:00:00+0100",
    "tomorrow",
    "1893456000",
  ])("refuses %s", (text) => {
    expect(parseRfc3339(text)).toBeNull();
  });
});

describe("resolveExpiry", () => {
  const now = Date.UTC(2030, 5, 1, 12, 0, 0, 0);
  it("defaults to 60 minutes after creation", () => {
    expect(resolveExpiry(undefined, now)).toEqual({ ok: true, value: new Date(now + DEFAULT_EXPIRY_MS).toISOString() });
    expect(DEFAULT_EXPIRY_MS).toBe(3_600_000);
  });

  it("stores a given time in UTC with milliseconds", () => {
    expect(resolveExpiry("2030-06-01T14:30:00.5+02:00", now)).toEqual({ ok: true, value: "2030-06-01T12:30:00.500Z" });
  });

  it("needs the future, and at most 30 days ahead", () => {
    const at = (ms: number) => new Date(ms).toISOString();
    expect(resolveExpiry(at(now), now)).toMatchObject({ ok: false, error: "expires_at_not_future" });
    expect(resolveExpiry(at(now - 1), now)).toMatchObject({ ok: false, error: "expires_at_not_future" });
    expect(resolveExpiry(at(now + 1), now)).toEqual({ ok: true, value: at(now + 1) });
    expect(resolveExpiry(at(now + MAX_EXPIRY_MS), now)).toEqual({ ok: true, value: at(now + MAX_EXPIRY_MS) });
    expect(resolveExpiry(at(now + MAX_EXPIRY_MS + 1), now)).toMatchObject({ ok: false, error: "expires_at_too_far" });
    expect(resolveExpiry("2030-06-02T12:00:00", now)).toMatchObject({ ok: false, error: "invalid_expires_at" });
  });
});

describe("requestFingerprint", () => {
  it("ignores member order and number spelling (RFC 8785), and sees every value", () => {
    const a = requestFingerprint({ currency: "USDT", amount: 100, meta: { b: 1, a: 2 } });
    expect(requestFingerprint({ meta: { a: 2, b: 1 }, amount: 100.0, currency: "USDT" })).toBe(a);
    expect(requestFingerprint({ currency: "USDT", amount: "100", meta: { b: 1, a: 2 } })).not.toBe(a);
    expect(requestFingerprint({ currency: "USDT", amount: 100, meta: { b: 1, a: 3 } })).not.toBe(a);
  });
});

describe("sandboxDepositAddress", () => {
  it("is stable per invoice, distinct between invoices, and EVM-shaped", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), (a, b) => {
        expect(sandboxDepositAddress(a)).toBe(sandboxDepositAddress(a));
        expect(sandboxDepositAddress(a)).toMatch(/^0x[0-9a-f]{40}$/);
        if (a !== b) expect(sandboxDepositAddress(a)).not.toBe(sandboxDepositAddress(b));
      }),
    );
  });
});
