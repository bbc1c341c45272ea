// Ledger rules: movements balance per currency or are refused; merchant balances never go negative.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { merchantAccount, movement, nextBalance, SYSTEM_ACCOUNTS, transfer } from "../../src/domain/ledger.ts";

const base = { cause: "adjustment" as const, causeId: "c1", kind: "adjustment", memo: null };

describe("movement", () => {
  it("accepts postings that sum to zero per currency", () => {
    const m = movement({
      ...base,
      postings: [
        ...transfer(SYSTEM_ACCOUNTS.incomingPayments, merchantAccount("m"), "USDT", 90n),
        ...transfer(SYSTEM_ACCOUNTS.incomingPayments, SYSTEM_ACCOUNTS.merchantFees, "USDT", 10n),
        ...transfer(SYSTEM_ACCOUNTS.conversion, merchantAccount("m"), "EUR", 5n),
      ],
    });
    expect(m.postings).toHaveLength(6);
  });

  it("throws on a movement that does not sum to zero in some currency", () => {
    expect(() =>
      movement({
        ...base,
        postings: [
          { account: "a", currency: "USDT", amount: 10n },
          { account: "b", currency: "USDT", amount: -9n },
        ],
      }),
    ).toThrow(/invariant violated/);
    expect(() =>
      movement({
        ...base,
        postings: [
          { account: "a", currency: "USDT", amount: 10n },
          { account: "b", currency: "EUR", amount: -10n },
        ],
      }),
    ).toThrow(/invariant violated/);
  });

  it("throws on zero postings and on single-posting movements", () => {
    expect(() =>
      movement({
        ...base,
        postings: [
          { account: "a", currency: "X", amount: 0n },
          { account: "b", currency: "X", amount: 0n },
        ],
      }),
    ).toThrow();
    expect(() => movement({ ...base, postings: [{ account: "a", currency: "X", amount: 1n }] })).toThrow();
  });

  it("balances for any set of transfers, and not after any single perturbation", () => {
    const transfers = fc.array(
      fc.record({ amount: fc.bigInt({ min: 1n, max: 10n ** 24n }), currency: fc.constantFrom("USDT", "EUR", "ETH") }),
      { minLength: 1, maxLength: 20 },
    );
    fc.assert(
      fc.property(transfers, fc.bigInt({ min: 1n, max: 1000n }), (list, delta) => {
        const postings = list.flatMap((t, i) => transfer(`x:${i}`, `y:${i}`, t.currency, t.amount));
        expect(() => movement({ ...base, postings })).not.toThrow();
        const broken = postings.map((p, i) => (i === 0 ? { ...p, amount: p.amount + delta } : p));
        expect(() => movement({ ...base, postings: broken })).toThrow();
      }),
    );
  });
});

describe("nextBalance", () => {
  it("refuses to take a merchant balance below zero, as a value", () => {
    expect(nextBalance(merchantAccount("m"), 10n, -10n)).toEqual({ ok: true, value: 0n });
    expect(nextBalance(merchantAccount("m"), 10n, -11n)).toEqual({ ok: false, error: "insufficient_balance" });
  });

  it("lets the outside world's accounts go negative", () => {
    expect(nextBalance(SYSTEM_ACCOUNTS.operatorAdjustments, 0n, -5n)).toEqual({ ok: true, value: -5n });
  });
});
