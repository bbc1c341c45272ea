// CreateWithdrawal rules 1-3 as a pure decision (rule 4, the balance, belongs to the ledger).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Currency } from "../../src/domain/currencies.ts";
import { checkWithdrawal, REFUSAL_POINTER, type WithdrawalFacts } from "../../src/domain/withdrawal.ts";

const USDT: Currency = {
  ticker: "USDT",
  fullName: "Tether USD",
  network: "ethereum",
  contractAddress: null,
  type: "stablecoin",
  icon: "",
  iconDark: "",
  internalTicker: "USDT",
  decimals: 6,
  networkFeeMinor: 1_000_000n,
  withdrawalMinMinor: 10_000_000n,
  withdrawalMaxMinor: 100_000_000_000n,
  rateUsd: { units: 1n, scale: 0 },
};

const valid: WithdrawalFacts = {
  merchantId: "m1",
  merchantStatus: "active",
  method: { merchantId: "m1", currency: "USDT", disabledAt: null, usableFrom: null },
  now: "2026-11-24T12:00:00.000Z",
  requestedCurrency: "USDT",
  currency: USDT,
  amount: "10",
};

const method = { merchantId: "m1", currency: "USDT", disabledAt: null, usableFrom: null };

function refusal(facts: Partial<WithdrawalFacts>): string | null {
  const result = checkWithdrawal({ ...valid, ...facts });
  return result.ok ? null : result.error;
}

describe("checkWithdrawal", () => {
  it("accepts an amount within the limits, in minor units", () => {
    expect(checkWithdrawal(valid)).toEqual({ ok: true, value: { amountMinor: 10_000_000n } });
    expect(checkWithdrawal({ ...valid, amount: 100000 })).toEqual({
      ok: true,
      value: { amountMinor: 100_000_000_000n },
    });
    expect(checkWithdrawal({ ...valid, amount: "12.50" })).toEqual({ ok: true, value: { amountMinor: 12_500_000n } });
  });

  it("refuses each rule with its own code, in the interface's order", () => {
    expect(refusal({ method: null })).toBe("withdrawal_method_not_found");
    expect(refusal({ method: { ...method, merchantId: "m2" } })).toBe("withdrawal_method_not_found");
    expect(refusal({ method: { ...method, currency: "ETH" } })).toBe("withdrawal_method_currency_mismatch");
    expect(refusal({ method: { ...method, disabledAt: "2026-11-24T11:00:00.000Z" } })).toBe(
      "withdrawal_method_disabled",
    );
    expect(refusal({ method: { ...method, usableFrom: "2026-11-24T12:00:00.001Z" } })).toBe(
      "withdrawal_method_cooling_off",
    );
    expect(refusal({ method: { ...method, usableFrom: "2026-11-24T12:00:00.000Z" } })).toBeNull();
    expect(refusal({ merchantStatus: "suspended" })).toBe("merchant_not_active");
    expect(refusal({ currency: null })).toBe("unknown_currency");
    expect(refusal({ amount: "9.999999" })).toBe("amount_below_minimum");
    expect(refusal({ amount: "100000.000001" })).toBe("amount_above_maximum");
    expect(refusal({ amount: "1e3" })).toBe("invalid_amount");
    expect(refusal({ amount: "-10" })).toBe("amount_not_positive");
    expect(refusal({ amount: "0" })).toBe("amount_not_positive");
    expect(refusal({ amount: "10.0000001" })).toBe("amount_too_precise");
    expect(refusal({ amount: true })).toBe("invalid_amount");
    // Order: a suspended merchant with another merchant's method hears about the method first.
    expect(refusal({ merchantStatus: "suspended", method: null })).toBe("withdrawal_method_not_found");
    expect(refusal({ merchantStatus: "suspended", amount: "1" })).toBe("merchant_not_active");
  });

  it("points every refusal at a body field", () => {
    for (const pointer of Object.values(REFUSAL_POINTER)) expect(pointer).toMatch(/^\/[A-Za-z]*$/);
  });

  it("accepts exactly the amounts between the limits", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 13n }), (minor) => {
        const text = `${minor / 1_000_000n}.${(minor % 1_000_000n).toString().padStart(6, "0")}`;
        const result = checkWithdrawal({ ...valid, amount: text });
        const within = minor >= USDT.withdrawalMinMinor && minor <= USDT.withdrawalMaxMinor;
        expect(result.ok).toBe(within);
        if (result.ok) expect(result.value.amountMinor).toBe(minor);
      }),
    );
  });
});
