// The velocity cap's rule (product §31): queued payouts go in order while the last 24 hours plus them stay within the cap; the first that does not fit, or has no value, holds back those behind it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fitsVelocityCap, parseVelocityCap, payoutsWithinCap } from "../../src/domain/velocityCap.ts";

const payout = (valueCents: bigint | null, i = 0) => ({ requestKey: `p${i}`, valueCents });

describe("payoutsWithinCap", () => {
  it("lets every payout go without a cap, even one with no value", () => {
    expect(payoutsWithinCap({ capCents: null, spentCents: 10n ** 12n, payouts: [payout(5n), payout(null, 1)] })).toBe(
      2,
    );
  });

  it("stops at the first payout over the cap: a later, smaller one does not overtake it", () => {
    const payouts = [payout(1000n, 0), payout(2000n, 1), payout(100n, 2)];
    expect(payoutsWithinCap({ capCents: 2500n, spentCents: 0n, payouts })).toBe(1);
    expect(payoutsWithinCap({ capCents: 3100n, spentCents: 0n, payouts })).toBe(3);
    expect(payoutsWithinCap({ capCents: 3100n, spentCents: 1n, payouts })).toBe(2);
  });

  it("holds a payout it cannot value while a cap is set", () => {
    expect(payoutsWithinCap({ capCents: 10n ** 9n, spentCents: 0n, payouts: [payout(null), payout(1n, 1)] })).toBe(0);
    expect(fitsVelocityCap(10n ** 9n, 0n, null)).toBe(false);
  });

  it("never lets the window's sum pass the cap, and stops only where the next would", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 8n }),
        fc.bigInt({ min: 0n, max: 10n ** 8n }),
        fc.array(fc.bigInt({ min: 1n, max: 10n ** 7n }), { maxLength: 20 }),
        (cap, spent, values) => {
          const payouts = values.map((v, i) => payout(v, i));
          const count = payoutsWithinCap({ capCents: cap, spentCents: spent, payouts });
          const sent = values.slice(0, count).reduce((a, b) => a + b, 0n);
          if (count > 0) expect(spent + sent).toBeLessThanOrEqual(cap);
          if (count < values.length) expect(spent + sent + (values[count] as bigint)).toBeGreaterThan(cap);
        },
      ),
    );
  });
});

describe("parseVelocityCap", () => {
  it("reads a positive USD amount with at most cents into cents", () => {
    expect(parseVelocityCap("25000")).toEqual({ ok: true, value: 2_500_000n });
    expect(parseVelocityCap("0.5")).toEqual({ ok: true, value: 50n });
    for (const bad of ["0", "-1", "1.001", "", "1e3", " 5"]) expect(parseVelocityCap(bad).ok).toBe(false);
  });
});
