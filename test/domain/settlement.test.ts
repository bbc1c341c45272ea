// Settlement decisions: how payments move an invoice, what expiry does, and that completion credits balance exactly.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkTransition, INVOICE_STATUSES, type InvoiceStatus } from "../../src/domain/invoiceStatus.ts";
import { merchantAccount, SYSTEM_ACCOUNTS } from "../../src/domain/ledger.ts";
import { convert } from "../../src/domain/money.ts";
import {
  type AmlStatus,
  amountDue,
  completionMovement,
  latePaymentMovement,
  type PaymentFacts,
  screenedPayment,
  statusAfterAml,
  statusAfterPayments,
  statusAtExpiry,
  summarizePayments,
} from "../../src/domain/settlement.ts";

const pay = (amountMinor: bigint, confirmed = true, amlStatus: AmlStatus = "none"): PaymentFacts => ({
  amountMinor,
  confirmed,
  amlStatus,
});

const payment: fc.Arbitrary<PaymentFacts> = fc.record({
  amountMinor: fc.bigInt({ min: 1n, max: 10n ** 12n }),
  confirmed: fc.boolean(),
  amlStatus: fc.constantFrom<AmlStatus>("none", "flagged", "cleared", "blocked"),
});

describe("summarizePayments", () => {
  it("counts every payment but blocked ones as paid, and only confirmed unflagged ones as settled", () => {
    const s = summarizePayments([
      pay(10n, false),
      pay(20n, true),
      pay(40n, true, "flagged"),
      pay(80n, true, "blocked"),
      pay(160n, true, "cleared"),
      pay(320n, false, "cleared"),
    ]);
    // Unsettled: the unconfirmed 10 and 320 and the flagged 40 (the blocked 80 is not counted at all).
    expect(s).toEqual({
      paidMinor: 10n + 20n + 40n + 160n + 320n,
      settledMinor: 20n + 160n,
      flagged: true,
      count: 6,
      unsettledCount: 3,
    });
  });

  it("never settles more than it counts as paid", () => {
    fc.assert(
      fc.property(fc.array(payment, { maxLength: 8 }), (payments) => {
        const s = summarizePayments(payments);
        expect(s.settledMinor <= s.paidMinor).toBe(true);
      }),
    );
  });

  it("says what is still due, never below zero", () => {
    expect(amountDue(100n, [pay(30n, false)])).toBe(70n);
    expect(amountDue(100n, [pay(30n), pay(90n)])).toBe(0n);
    expect(amountDue(100n, [pay(30n, true, "blocked")])).toBe(100n);
  });
});

describe("statusAfterPayments", () => {
  it("follows product §5", () => {
    expect(statusAfterPayments("pending", 100n, [pay(40n, false)])).toEqual({
      to: "processing",
      cause: "payment_seen",
    });
    expect(statusAfterPayments("pending", 100n, [pay(40n, true)])).toEqual({ to: "processing", cause: "payment_seen" });
    expect(statusAfterPayments("pending", 100n, [pay(100n)])).toEqual({ to: "completed", cause: "payments_cover" });
    expect(statusAfterPayments("pending", 100n, [pay(150n)])).toEqual({ to: "completed", cause: "payments_cover" });
    expect(statusAfterPayments("processing", 100n, [pay(60n), pay(40n)])).toEqual({
      to: "completed",
      cause: "payments_cover",
    });
    expect(statusAfterPayments("processing", 100n, [pay(60n), pay(40n, false)])).toBeNull();
    expect(statusAfterPayments("pending", 100n, [pay(100n, true, "flagged")])).toEqual({
      to: "aml_check",
      cause: "aml_flagged",
    });
    // A flag wins over coverage.
    expect(statusAfterPayments("processing", 100n, [pay(100n), pay(1n, false, "flagged")])).toEqual({
      to: "aml_check",
      cause: "aml_flagged",
    });
    expect(statusAfterPayments("aml_check", 100n, [pay(100n, true, "flagged"), pay(100n)])).toBeNull();
    expect(statusAfterPayments("completed", 100n, [pay(200n)])).toBeNull();
  });

  it("only ever decides transitions the table allows", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<InvoiceStatus>(...INVOICE_STATUSES),
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        fc.array(payment, { maxLength: 6 }),
        (status, finalAmount, payments) => {
          for (const change of [
            statusAfterPayments(status, finalAmount, payments),
            statusAtExpiry(status, finalAmount, payments),
            statusAfterAml(status, "clear", finalAmount, payments),
            statusAfterAml(status, "block", finalAmount, payments),
          ]) {
            if (change !== null) expect(checkTransition(status, change.to, change.cause).ok).toBe(true);
          }
        },
      ),
    );
  });

  it("completes only with confirmed, unflagged payments covering final_amount", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        fc.array(payment, { maxLength: 6 }),
        (finalAmount, payments) => {
          const change = statusAfterPayments("processing", finalAmount, payments);
          if (change?.to === "completed") {
            expect(summarizePayments(payments).settledMinor >= finalAmount).toBe(true);
            expect(payments.some((p) => p.amlStatus === "flagged")).toBe(false);
          }
        },
      ),
    );
  });
});

describe("statusAfterAml", () => {
  it("blocks into aml_block, clears into completed or back to processing", () => {
    expect(statusAfterAml("aml_check", "block", 100n, [pay(100n, true, "blocked")])).toEqual({
      to: "aml_block",
      cause: "aml_blocked",
    });
    expect(statusAfterAml("aml_check", "clear", 100n, [pay(100n, true, "cleared")])).toEqual({
      to: "completed",
      cause: "aml_cleared",
    });
    expect(statusAfterAml("aml_check", "clear", 100n, [pay(60n, true, "cleared")])).toEqual({
      to: "processing",
      cause: "aml_cleared",
    });
    expect(statusAfterAml("aml_check", "clear", 100n, [pay(100n, false, "cleared")])).toEqual({
      to: "processing",
      cause: "aml_cleared",
    });
    expect(statusAfterAml("processing", "clear", 100n, [pay(100n)])).toBeNull();
  });
});

describe("statusAtExpiry", () => {
  it("expires unpaid invoices, fails partly paid ones, leaves the rest", () => {
    expect(statusAtExpiry("pending", 100n, [])).toEqual({ to: "expired", cause: "expired" });
    expect(statusAtExpiry("processing", 100n, [pay(99n, false)])).toEqual({ to: "failed", cause: "expired" });
    expect(statusAtExpiry("processing", 100n, [pay(99n, true)])).toEqual({ to: "failed", cause: "expired" });
    // Paid in full but not yet confirmed: the payer did pay, confirmation will complete it.
    expect(statusAtExpiry("processing", 100n, [pay(100n, false)])).toBeNull();
    // Screening has the invoice: there is no way out of aml_check on expiry.
    expect(statusAtExpiry("aml_check", 100n, [pay(10n, true, "flagged")])).toBeNull();
    for (const status of ["completed", "failed", "expired", "refunded", "refund_processing", "aml_block"] as const) {
      expect(statusAtExpiry(status, 100n, [])).toBeNull();
    }
  });
});

describe("completionMovement", () => {
  const usdt = { ticker: "USDT", decimals: 6, rateUsd: { units: 1n, scale: 0 } };
  const eur = { ticker: "EUR", decimals: 2, rateUsd: { units: 108n, scale: 2 } };
  const eth = { ticker: "ETH", decimals: 18, rateUsd: { units: 3000n, scale: 0 } };

  const pricing = fc
    .record({
      fee: fc.bigInt({ min: 0n, max: 10n ** 9n }),
      network: fc.bigInt({ min: 0n, max: 10n ** 9n }),
      receive: fc.bigInt({ min: 1n, max: 10n ** 12n }),
      over: fc.bigInt({ min: 0n, max: 10n ** 9n }),
    })
    .map(({ fee, network, receive, over }) => ({
      merchantFeeMinor: fee,
      networkAndOtherFeesMinor: network,
      merchantReceiveAmountMinor: receive,
      finalAmountMinor: receive + fee + network,
      settledMinor: receive + fee + network + over,
      over,
    }));

  it("balances per currency and credits merchant_receive_amount plus overpayment", () => {
    fc.assert(
      fc.property(
        pricing,
        fc.constantFrom(usdt, eur, eth),
        fc.constantFrom(usdt, eur, eth),
        (p, currency, settlement) => {
          const { over, ...amounts } = p;
          const c = completionMovement({ invoiceId: "inv", merchantId: "m", currency, settlement, ...amounts });
          expect(c.creditMinor).toBe(p.merchantReceiveAmountMinor + over);
          const sums = new Map<string, bigint>();
          for (const posting of c.movement.postings) {
            sums.set(posting.currency, (sums.get(posting.currency) ?? 0n) + posting.amount);
            expect(posting.amount).not.toBe(0n);
          }
          for (const sum of sums.values()) expect(sum).toBe(0n);
          const merchantCredit = c.movement.postings
            .filter((x) => x.account === merchantAccount("m"))
            .reduce((acc, x) => acc + x.amount, 0n);
          if (settlement.ticker === currency.ticker) {
            expect(merchantCredit).toBe(c.creditMinor);
          } else {
            expect(c.settlementCreditMinor).toBe(convert(c.creditMinor, currency, settlement));
            expect(merchantCredit).toBe(c.settlementCreditMinor);
          }
          expect(c.movement).toMatchObject({ cause: "invoice", causeId: "inv", kind: "completion" });
          const incoming = c.movement.postings.find((x) => x.account === SYSTEM_ACCOUNTS.incomingPayments);
          expect(incoming).toEqual({
            account: SYSTEM_ACCOUNTS.incomingPayments,
            currency: currency.ticker,
            amount: -p.settledMinor,
          });
        },
      ),
    );
  });

  it("converts through the conversion account at the catalog rates, half up", () => {
    const c = completionMovement({
      invoiceId: "inv",
      merchantId: "m",
      currency: usdt,
      settlement: eur,
      finalAmountMinor: 100_000000n,
      merchantFeeMinor: 1_000000n,
      networkAndOtherFeesMinor: 1_000000n,
      merchantReceiveAmountMinor: 98_000000n,
      settledMinor: 100_000000n,
    });
    // 98 USDT at 1 USD / 1.08 USD per EUR = 90.7407... EUR -> 90.74.
    expect(c.settlementCreditMinor).toBe(9074n);
    expect(c.movement.postings).toEqual(
      expect.arrayContaining([
        { account: SYSTEM_ACCOUNTS.conversion, currency: "USDT", amount: 98_000000n },
        { account: SYSTEM_ACCOUNTS.conversion, currency: "EUR", amount: -9074n },
        { account: merchantAccount("m"), currency: "EUR", amount: 9074n },
      ]),
    );
  });

  it("refuses to complete on payments that do not cover final_amount", () => {
    expect(() =>
      completionMovement({
        invoiceId: "inv",
        merchantId: "m",
        currency: usdt,
        settlement: usdt,
        finalAmountMinor: 100n,
        merchantFeeMinor: 1n,
        networkAndOtherFeesMinor: 0n,
        merchantReceiveAmountMinor: 99n,
        settledMinor: 99n,
      }),
    ).toThrow(/invariant/);
  });
});

describe("latePaymentMovement", () => {
  const usdt = { ticker: "USDT", decimals: 6, rateUsd: { units: 1n, scale: 0 } };
  const eur = { ticker: "EUR", decimals: 2, rateUsd: { units: 108n, scale: 2 } };

  it("credits a late payment in full to the merchant, once per payment", () => {
    const m = latePaymentMovement({
      invoiceId: "inv",
      merchantId: "m",
      paymentId: "p1",
      currency: usdt,
      settlement: usdt,
      amountMinor: 50_000_000n,
    });
    expect(m?.kind).toBe("late_payment:p1");
    expect(m?.postings).toEqual([
      { account: "external:incoming_payments", currency: "USDT", amount: -50_000_000n },
      { account: "merchant:m", currency: "USDT", amount: 50_000_000n },
    ]);
  });

  it("converts into the settlement currency through the conversion desk, balanced per currency", () => {
    const m = latePaymentMovement({
      invoiceId: "inv",
      merchantId: "m",
      paymentId: "p2",
      currency: usdt,
      settlement: eur,
      amountMinor: 108_000_000n,
    });
    expect(m?.postings.find((p) => p.account === "merchant:m")).toEqual({
      account: "merchant:m",
      currency: "EUR",
      amount: 10_000n,
    });
    const dust = latePaymentMovement({
      invoiceId: "inv",
      merchantId: "m",
      paymentId: "p3",
      currency: usdt,
      settlement: eur,
      amountMinor: 1n,
    });
    expect(dust).toBeNull();
  });
});

describe("screenedPayment: a payment that waited for its sender's screening", () => {
  it("settles when screened clear, and is flagged with the reason otherwise (never settled unscreened)", () => {
    expect(screenedPayment("clear")).toEqual({ amlStatus: "none", reason: null });
    expect(screenedPayment("listed")).toEqual({ amlStatus: "flagged", reason: "listed" });
    expect(screenedPayment("screening_unavailable")).toEqual({
      amlStatus: "flagged",
      reason: "screening_unavailable",
    });
    // What it becomes counts as the summary says: settled only when clear, a question for the operator otherwise.
    expect(summarizePayments([{ ...pay(5n), amlStatus: screenedPayment("clear").amlStatus }]).settledMinor).toBe(5n);
    expect(summarizePayments([{ ...pay(5n), amlStatus: screenedPayment("listed").amlStatus }]).flagged).toBe(true);
  });
});
