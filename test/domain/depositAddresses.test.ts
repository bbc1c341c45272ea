// A deposit address per customer (product §30): the forwarder id binds merchant, ticker and customer unambiguously; the status table; fees and outcomes at confirmation; balanced movements.
import fc from "fast-check";
import { getAddress } from "viem";
import { describe, expect, it } from "vitest";
import {
  checkCustomerReference,
  customerDepositAddress,
  customerForwarderId,
  DEPOSIT_STATUSES,
  DEPOSIT_TRANSITIONS,
  depositCreditMovement,
  depositFees,
  depositOutcome,
  depositParkMovement,
  depositTransition,
  isFinalDeposit,
} from "../../src/domain/depositAddresses.ts";
import { forwarderAddress, forwarderId } from "../../src/domain/forwarders.ts";
import { type Decimal, parseDecimal } from "../../src/domain/money.ts";

const OWNER = getAddress("0x1111111111111111111111111111111111111111");
const text = fc.string({ maxLength: 12 });

describe("the customer's forwarder id", () => {
  it("is a 32-byte id, the same for the same triple, different when any part differs, even across a boundary", () => {
    fc.assert(
      fc.property(fc.tuple(text, text, text), fc.tuple(text, text, text), ([m, t, c], [m2, t2, c2]) => {
        const id = customerForwarderId(m, t, c);
        expect(id).toMatch(/^0x[0-9a-f]{64}$/);
        expect(customerForwarderId(m, t, c)).toBe(id);
        const same = m === m2 && t === t2 && c === c2;
        expect(customerForwarderId(m2, t2, c2) === id).toBe(same);
      }),
    );
    // The concatenations agree; the encodings do not.
    expect(customerForwarderId("ab", "c", "d")).not.toBe(customerForwarderId("a", "bc", "d"));
  });

  it("is never an invoice's forwarder id, and gives the forwarder address of that id", () => {
    fc.assert(
      fc.property(text, text, fc.string({ minLength: 1 }), (m, t, c) => {
        const id = customerForwarderId(m, t, c);
        expect(id).not.toBe(forwarderId(`${m}${t}${c}`));
        expect(customerDepositAddress(OWNER, m, t, c)).toBe(forwarderAddress(OWNER, id));
      }),
      { numRuns: 20 },
    );
  });

  it("takes customer references of 1 to 200 characters without control characters", () => {
    expect(checkCustomerReference("user-42 ü").ok).toBe(true);
    for (const bad of ["", "x".repeat(201), "a\nb", "\u0000"]) expect(checkCustomerReference(bad).ok).toBe(false);
  });
});

describe("a deposit's statuses", () => {
  it("lists only known statuses, leaves completed, blocked and dust final, and refuses the rest", () => {
    for (const t of DEPOSIT_TRANSITIONS) {
      expect(DEPOSIT_STATUSES).toContain(t.from);
      expect(DEPOSIT_STATUSES).toContain(t.to);
    }
    // A refunded deposit whose claim expires or whose payout fails is held again, for the merchant to decide anew.
    expect(DEPOSIT_STATUSES.filter(isFinalDeposit)).toEqual(["completed", "blocked", "dust"]);
    expect(depositTransition("refunded", "held")?.why).toMatch(/claim expired or its payout failed/);
    expect(depositTransition("refunded", "completed")).toBeNull();
    expect(depositTransition("completed", "reversed")).toBeNull();
    expect(depositTransition("held", "refunded")?.why).toMatch(/claim link/);
    expect(depositTransition("aml_check", "held")).toBeNull();
  });
});

describe("a confirmed deposit", () => {
  const plan = { feePercent: parseDecimal("1.5") as Decimal };
  const entry = { networkFeeMinor: 100n, minDepositMinor: 1_000n };

  it("pays the fees of §4 from its amount, exactly; all fees or more make it dust", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 24n }), (amount) => {
        const fees = depositFees(amount, entry, plan);
        if (fees === null) return;
        expect(fees.credit + fees.merchantFee + fees.networkFee).toBe(amount);
        expect(fees.credit > 0n).toBe(true);
      }),
    );
    expect(depositFees(10_000n, entry, plan)).toEqual({ merchantFee: 150n, networkFee: 100n, credit: 9_750n });
    expect(depositFees(101n, { networkFeeMinor: 100n }, plan)).toBeNull();
  });

  it("is dust below the minimum whatever else, then screened, then held at an inactive address, else credited", () => {
    const at = (amount: bigint, screening: "clear" | "listed" | "pending", active: boolean) =>
      depositOutcome({ amount, entry, plan, screening, active }).status;
    expect(at(999n, "listed", false)).toBe("dust");
    expect(at(1_000n, "listed", false)).toBe("aml_check");
    expect(at(1_000n, "pending", true)).toBe("aml_check");
    expect(at(1_000n, "clear", false)).toBe("held");
    expect(at(1_000n, "clear", true)).toBe("completed");
  });

  it("moves balanced money naming the deposit, from the payers or the merchant's hold", () => {
    const d = { depositId: "d1", merchantId: "m1", currency: "USDT", amount: 10_000n };
    const fees = depositFees(10_000n, entry, plan);
    if (fees === null) throw new Error("fees");
    const credit = depositCreditMovement(d, fees, "incoming");
    expect([credit.cause, credit.causeId, credit.kind]).toEqual(["deposit", "d1", "credit"]);
    expect(credit.postings.find((p) => p.account === "merchant:m1")?.amount).toBe(9_750n);
    expect(depositCreditMovement(d, fees, "held").postings[0]?.account).toBe("held:deposits:m1");
    expect(depositParkMovement(d, "dust").postings[1]).toEqual({
      account: "operator:dust",
      currency: "USDT",
      amount: 10_000n,
    });
    expect(depositParkMovement(d, "blocked").kind).toBe("blocked");
  });
});
