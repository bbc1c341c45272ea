// Card provider fees: a balance transaction is booked only when its figures add up, as the operator's cost, keyed by its payment or refund.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BalanceTransaction, cardFeeMovement, checkBalanceTransaction } from "../../src/domain/cardFee.ts";
import { isMerchantAccount, SYSTEM_ACCOUNTS } from "../../src/domain/ledger.ts";

const charge: BalanceTransaction = {
  id: "txn_1",
  type: "charge",
  currency: "EUR",
  amountMinor: 10_000n,
  feeMinor: 175n,
  netMinor: 9_825n,
  feeDetails: [
    { type: "stripe_fee", amountMinor: 150n, currency: "EUR" },
    { type: "tax", amountMinor: 25n, currency: "EUR" },
  ],
};

describe("checkBalanceTransaction", () => {
  it("takes one whose net is amount less fee and whose details sum to the fee", () => {
    expect(checkBalanceTransaction(charge)).toEqual({ ok: true, value: charge });
    // A refund's: negative amount, no fee, no details.
    const refund = { ...charge, type: "refund", amountMinor: -3_000n, feeMinor: 0n, netMinor: -3_000n, feeDetails: [] };
    expect(checkBalanceTransaction(refund).ok).toBe(true);
  });

  it("refuses figures that do not add up", () => {
    for (const bad of [
      { ...charge, netMinor: 9_826n },
      { ...charge, feeDetails: [{ type: "stripe_fee", amountMinor: 150n, currency: "EUR" }] },
      { ...charge, feeDetails: [{ type: "stripe_fee", amountMinor: 175n, currency: "USD" }] },
    ]) {
      expect(checkBalanceTransaction(bad)).toMatchObject({ ok: false, error: "inconsistent_fee" });
    }
  });
});

describe("cardFeeMovement", () => {
  it("moves a fee from the operator's card-fee account to the provider, keyed by the payment", () => {
    const m = cardFeeMovement({
      source: "payment",
      sourceId: "pi_1",
      balanceTransactionId: "txn_1",
      currency: "EUR",
      feeMinor: 175n,
    });
    expect(m).toMatchObject({ cause: "card_fee", causeId: "pi_1", kind: "payment" });
    expect(m?.memo).toContain("txn_1");
    expect(m?.postings).toEqual([
      { account: SYSTEM_ACCOUNTS.operatorCardFees, currency: "EUR", amount: -175n },
      { account: SYSTEM_ACCOUNTS.cardProvider, currency: "EUR", amount: 175n },
    ]);
  });

  it("credits the operator a fee the provider gave back, and books nothing for no fee", () => {
    const back = cardFeeMovement({
      source: "refund",
      sourceId: "re_1",
      balanceTransactionId: "txn_2",
      currency: "USD",
      feeMinor: -40n,
    });
    expect(back?.postings).toEqual([
      { account: SYSTEM_ACCOUNTS.cardProvider, currency: "USD", amount: -40n },
      { account: SYSTEM_ACCOUNTS.operatorCardFees, currency: "USD", amount: 40n },
    ]);
    expect(
      cardFeeMovement({
        source: "refund",
        sourceId: "re_2",
        balanceTransactionId: "txn_3",
        currency: "USD",
        feeMinor: 0n,
      }),
    ).toBeNull();
  });

  it("costs the operator exactly the fee and never touches a merchant's balance", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }), (fee) => {
        const m = cardFeeMovement({
          source: "payment",
          sourceId: "pi_x",
          balanceTransactionId: "txn_x",
          currency: "JPY",
          feeMinor: fee,
        });
        if (fee === 0n) return m === null;
        const operator = m?.postings.find((p) => p.account === SYSTEM_ACCOUNTS.operatorCardFees)?.amount;
        return (
          operator === -fee &&
          m?.postings.reduce((sum, p) => sum + p.amount, 0n) === 0n &&
          m.postings.every((p) => !isMerchantAccount(p.account))
        );
      }),
    );
  });
});
