// Card provider amounts and dispute movements (product §20): exact unit conversions, holds that never overdraw, movements that balance.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkoutExpiry, fromProviderMinor, refundOutcome, toProviderMinor } from "../../src/domain/cardProvider.ts";
import {
  cappedDispute,
  disputeOutcome,
  holdMovement,
  lossMovement,
  releaseMovement,
  splitHold,
} from "../../src/domain/dispute.ts";

const eur = { ticker: "EUR", decimals: 2, rateUsd: { units: 108n, scale: 2 } };

describe("provider units", () => {
  it("converts both ways exactly, and refuses what the provider cannot express", () => {
    expect(toProviderMinor(1234n, 2, "EUR")).toEqual({ ok: true, value: 1234n });
    expect(toProviderMinor(1500n, 2, "JPY")).toEqual({ ok: true, value: 15n });
    expect(toProviderMinor(1234n, 2, "JPY").ok).toBe(false);
    expect(toProviderMinor(5n, 0, "EUR")).toEqual({ ok: true, value: 500n });
    expect(fromProviderMinor(15n, 2, "JPY")).toEqual({ ok: true, value: 1500n });
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 12n }), fc.integer({ min: 2, max: 8 }), (amount, decimals) => {
        const there = toProviderMinor(amount * 10n ** BigInt(decimals - 2), decimals, "EUR");
        expect(there.ok && fromProviderMinor(there.value, decimals, "EUR")).toEqual({
          ok: true,
          value: amount * 10n ** BigInt(decimals - 2),
        });
      }),
    );
  });

  it("keeps a checkout within the provider's 30 minutes to 24 hours, following the invoice's expiry", () => {
    const now = new Date("2026-11-26T00:00:00.000Z");
    expect(checkoutExpiry("2026-11-26T01:00:00.000Z", now)).toBe("2026-11-26T01:00:00.000Z");
    expect(checkoutExpiry("2026-11-26T00:10:00.000Z", now)).toBe("2026-11-26T00:31:00.000Z");
    expect(checkoutExpiry("2026-12-20T00:00:00.000Z", now)).toBe("2026-11-26T23:00:00.000Z");
    expect(checkoutExpiry(null, now)).toBe("2026-11-26T23:00:00.000Z");
  });

  it("reads refund and dispute statuses", () => {
    expect(refundOutcome("succeeded")).toBe("completed");
    expect(refundOutcome("failed")).toBe("failed");
    expect(refundOutcome("canceled")).toBe("failed");
    expect(refundOutcome("pending")).toBeNull();
    expect(refundOutcome("requires_action")).toBeNull();
    expect(disputeOutcome("won")).toBe("won");
    expect(disputeOutcome("warning_closed")).toBe("won");
    expect(disputeOutcome("lost")).toBe("lost");
  });
});

describe("dispute holds", () => {
  it("never takes more than the available balance; the rest is a receivable", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 15n }),
        fc.bigInt({ min: -10n, max: 10n ** 15n }),
        (held, available) => {
          const { coveredMinor, receivableMinor } = splitHold(held, available);
          expect(coveredMinor + receivableMinor).toBe(held);
          expect(coveredMinor >= 0n && receivableMinor >= 0n).toBe(true);
          expect(coveredMinor <= (available > 0n ? available : 0n)).toBe(true);
        },
      ),
    );
  });

  it("takes at most the payment: an amount above it is capped and flagged", () => {
    expect(cappedDispute(5000n, 2000n)).toEqual({ amountMinor: 2000n, aboveThePayment: true });
    expect(cappedDispute(2000n, 2000n)).toEqual({ amountMinor: 2000n, aboveThePayment: false });
    expect(cappedDispute(1500n, 2000n)).toEqual({ amountMinor: 1500n, aboveThePayment: false });
    expect(cappedDispute(1n, 0n)).toEqual({ amountMinor: 0n, aboveThePayment: true });
  });

  it("balances every movement, and a release undoes its hold exactly", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        fc.bigInt({ min: 0n, max: 10n ** 12n }),
        (held, available) => {
          const { receivableMinor } = splitHold(held, available);
          const hold = { disputeId: "dp_1", merchantId: "m1", currency: "EUR", heldMinor: held, receivableMinor };
          const sums = new Map<string, bigint>();
          for (const p of [...holdMovement(hold).postings, ...releaseMovement(hold).postings]) {
            sums.set(p.account, (sums.get(p.account) ?? 0n) + p.amount);
          }
          for (const sum of sums.values()) expect(sum).toBe(0n);
          // movement() throws on an unbalanced set; a loss in another currency goes through the conversion desk.
          expect(lossMovement(hold, held, eur).postings.length).toBe(2);
          expect(lossMovement({ ...hold, currency: "USD" }, held, eur).postings.length).toBe(4);
        },
      ),
    );
  });
});

describe("the dashboard ledger's cause of a dispute movement", () => {
  it("is dispute, for the hold, its release and its loss", async () => {
    const { entryCause } = await import("../../src/domain/ledgerCause.ts");
    for (const kind of ["hold", "release", "loss"]) expect(entryCause("dispute", kind)).toBe("dispute");
  });
});
