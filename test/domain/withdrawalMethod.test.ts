// Withdrawal methods' cooling-off (product §14) and how the dashboard's ledger names an entry's cause.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entryCause } from "../../src/domain/ledgerCause.ts";
import { coolingOffEnd } from "../../src/domain/withdrawalMethod.ts";

describe("coolingOffEnd", () => {
  it("is none without a period, and exactly the period later with one", () => {
    expect(coolingOffEnd(Date.parse("2026-11-24T12:00:00.000Z"), 0)).toBeNull();
    expect(coolingOffEnd(Date.parse("2026-11-24T12:00:00.000Z"), 86_400_000)).toBe("2026-11-25T12:00:00.000Z");
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        fc.integer({ min: 1, max: 43_200 * 60_000 }),
        (now, ms) => {
          expect(Date.parse(coolingOffEnd(now, ms) as string) - now).toBe(ms);
        },
      ),
    );
  });
});

describe("entryCause", () => {
  it("names reversals and fees, keeps the known causes, and never shows an unknown cause as a payment", () => {
    expect(entryCause("withdrawal", "debit")).toBe("withdrawal");
    expect(entryCause("withdrawal", "reversal")).toBe("reversal");
    expect(entryCause("refund", "reversal")).toBe("reversal");
    expect(entryCause("invoice", "completion")).toBe("invoice");
    expect(entryCause("invoice", "late_payment:abc")).toBe("invoice");
    expect(entryCause("adjustment", "adjustment")).toBe("adjustment");
    expect(entryCause("fee", "network")).toBe("fee");
    expect(entryCause("invoice", "fee")).toBe("fee");
    // A deposit to a customer's address (product §30), whatever its kind.
    expect(entryCause("deposit", "credit")).toBe("deposit");
    expect(entryCause("deposit", "held")).toBe("deposit");
    expect(entryCause("something_new", "x")).toBe("adjustment");
    // A customer's deposit credited to the merchant (product §30) shows as a deposit.
    expect(entryCause("deposit", "credit")).toBe("deposit");
  });
});
