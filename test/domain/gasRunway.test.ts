// The hot wallet's gas runway (issue 50): free coin is the balance less what is promised, never below 0, and the flushes and payouts it covers are the most that fit at the fee, at the gas assumed for each.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FLUSH_GAS_ASSUMED, gasRunway, PAYOUT_GAS_ASSUMED } from "../../src/domain/gasRunway.ts";

const gwei = 10n ** 9n;

describe("gasRunway", () => {
  it("counts what the free coin pays for at the fee: a promised transaction's coin is not free", () => {
    const runway = gasRunway(10n ** 18n, 10n ** 17n, 10n * gwei);
    expect(runway.freeWei).toBe(9n * 10n ** 17n);
    expect(runway.flushesCovered).toBe((9n * 10n ** 17n) / (FLUSH_GAS_ASSUMED * 10n * gwei));
    expect(runway.payoutsCovered).toBe(900n);
  });

  it("covers nothing when the promises take the balance, and never goes below 0", () => {
    expect(gasRunway(5n, 7n, gwei)).toMatchObject({ freeWei: 0n, flushesCovered: 0n, payoutsCovered: 0n });
  });

  it("covers the most that fit, each at its assumed gas (a fee of 0 counted as 1 wei)", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 22n }),
        fc.bigInt({ min: 0n, max: 10n ** 22n }),
        fc.bigInt({ min: 0n, max: 10n ** 13n }),
        (balance, promised, fee) => {
          const r = gasRunway(balance, promised, fee);
          const price = fee > 0n ? fee : 1n;
          expect(r.freeWei + (balance > promised ? promised : balance)).toBe(balance);
          for (const [covered, gas] of [
            [r.flushesCovered, FLUSH_GAS_ASSUMED],
            [r.payoutsCovered, PAYOUT_GAS_ASSUMED],
          ] as const) {
            expect(covered * gas * price <= r.freeWei).toBe(true);
            expect((covered + 1n) * gas * price > r.freeWei).toBe(true);
          }
        },
      ),
    );
  });
});
