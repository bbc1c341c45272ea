// RefundCrypto and RefundFiat rules as a pure decision: destination forms, rule order, and the amounts of product §7.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkTransition, INVOICE_STATUSES } from "../../src/domain/invoiceStatus.ts";
import { convert } from "../../src/domain/money.ts";
import {
  cryptoDestination,
  planRefund,
  REFUND_REFUSAL_POINTER,
  type RefundFacts,
  type RefundInvoiceFacts,
  statusAfterRefund,
} from "../../src/domain/refund.ts";

const USDT = { ticker: "USDT", type: "stablecoin", decimals: 6, rateUsd: { units: 1n, scale: 0 } } as const;
const ETH = { ticker: "ETH", type: "token", decimals: 18, rateUsd: { units: 3000n, scale: 0 } } as const;
const EUR = { ticker: "EUR", type: "fiat", decimals: 2, rateUsd: { units: 108n, scale: 2 } } as const;
const USD = { ticker: "USD", type: "fiat", decimals: 2, rateUsd: { units: 1n, scale: 0 } } as const;
const CATALOG = [USDT, ETH, EUR, USD];

const completedUsdt: RefundInvoiceFacts = {
  status: "completed",
  currency: USDT,
  settlement: USDT,
  paidMinor: 100_000_000n,
  soleSenderAddress: "0xpayer",
  unsettledPayments: 0,
};

function facts(overrides: Partial<RefundFacts>): RefundFacts {
  return {
    type: "crypto",
    destination: { withdrawToSameAddress: true },
    merchantStatus: "active",
    invoice: completedUsdt,
    hasLiveRefund: false,
    ...overrides,
  };
}

function refusal(overrides: Partial<RefundFacts>): string | null {
  const result = planRefund(facts(overrides));
  return result.ok ? null : result.error;
}

describe("cryptoDestination", () => {
  it("takes an address alone, or withdrawToSameAddress: true alone", () => {
    expect(cryptoDestination({ address: "0xa" })).toEqual({ ok: true, value: { kind: "address", address: "0xa" } });
    expect(cryptoDestination({ address: "0xa", withdrawToSameAddress: false })).toEqual({
      ok: true,
      value: { kind: "address", address: "0xa" },
    });
    expect(cryptoDestination({ withdrawToSameAddress: true })).toEqual({ ok: true, value: { kind: "sender" } });
  });

  it("refuses both forms at once, and neither", () => {
    expect(cryptoDestination({ address: "0xa", withdrawToSameAddress: true }).ok).toBe(false);
    expect(cryptoDestination({ address: "0xa", withdrawToSameAddress: true })).toMatchObject({
      error: "refund_destination_ambiguous",
    });
    for (const body of [{}, { withdrawToSameAddress: false }]) {
      expect(cryptoDestination(body)).toMatchObject({ ok: false, error: "refund_destination_missing" });
    }
  });
});

describe("planRefund: rules", () => {
  it("accepts a crypto refund to the sender, and one to an address", () => {
    expect(planRefund(facts({}))).toEqual({
      ok: true,
      value: {
        type: "crypto",
        currency: "USDT",
        amountMinor: 100_000_000n,
        toAddress: "0xpayer",
        withdrawToSameAddress: true,
        debit: { currency: "USDT", amountMinor: 100_000_000n },
      },
    });
    const toAddress = planRefund(facts({ destination: { address: "0xdest" } }));
    expect(toAddress).toMatchObject({ ok: true, value: { toAddress: "0xdest", withdrawToSameAddress: false } });
  });

  it("refuses each broken rule with its own code", () => {
    expect(refusal({ destination: { address: "0xa", withdrawToSameAddress: true } })).toBe(
      "refund_destination_ambiguous",
    );
    expect(refusal({ destination: {} })).toBe("refund_destination_missing");
    expect(refusal({ destination: null })).toBe("refund_destination_missing");
    expect(refusal({ invoice: null })).toBe("refund_invoice_not_found");
    expect(refusal({ merchantStatus: "suspended" })).toBe("merchant_not_active");
    expect(refusal({ invoice: { ...completedUsdt, currency: EUR, settlement: EUR } })).toBe("invoice_currency_is_fiat");
    expect(refusal({ type: "fiat", destination: null })).toBe("settlement_not_fiat");
    expect(refusal({ hasLiveRefund: true })).toBe("refund_exists");
    expect(refusal({ invoice: { ...completedUsdt, status: "processing" } })).toBe("invoice_not_completed");
    expect(refusal({ invoice: { ...completedUsdt, soleSenderAddress: null } })).toBe("sender_address_unavailable");
  });

  it("accepts only completed invoices, whatever else holds", () => {
    for (const status of INVOICE_STATUSES) {
      const outcome = refusal({ invoice: { ...completedUsdt, status } });
      expect({ status, outcome }).toEqual({ status, outcome: status === "completed" ? null : "invoice_not_completed" });
    }
  });

  it("checks in the documented order: destination, invoice, merchant, currency kind, live refund, status, sender", () => {
    const broken: Partial<RefundFacts>[] = [
      { destination: {} },
      { invoice: null },
      { merchantStatus: "suspended" },
      {
        invoice: {
          ...completedUsdt,
          currency: EUR,
          settlement: EUR,
          status: "refund_processing",
          soleSenderAddress: null,
        },
      },
      { hasLiveRefund: true },
      { invoice: { ...completedUsdt, status: "refunded", soleSenderAddress: null } },
      { invoice: { ...completedUsdt, soleSenderAddress: null } },
    ];
    const expected = [
      "refund_destination_missing",
      "refund_invoice_not_found",
      "merchant_not_active",
      "invoice_currency_is_fiat",
      "refund_exists",
      "invoice_not_completed",
      "sender_address_unavailable",
    ];
    // Breaking rule i together with every later rule still answers rule i.
    for (let i = 0; i < broken.length; i++) {
      const combined = Object.assign({}, ...broken.slice(i).reverse()) as Partial<RefundFacts>;
      expect(refusal(combined)).toBe(expected[i]);
    }
  });

  it("names a pointer for every refusal", () => {
    for (const pointer of Object.values(REFUND_REFUSAL_POINTER)) expect(pointer).toMatch(/^\//);
  });
});

describe("planRefund: amounts (product §7)", () => {
  it("fiat: paid_amount converted into the settlement currency, rounded half up", () => {
    // 99.9918 USDT at 1 / 1.08 is 92.585 EUR exactly: half up gives 92.59 (half even would give 92.58).
    const autoconverted = { ...completedUsdt, settlement: EUR, paidMinor: 99_991_800n };
    expect(planRefund(facts({ type: "fiat", destination: null, invoice: autoconverted }))).toEqual({
      ok: true,
      value: {
        type: "fiat",
        currency: "EUR",
        amountMinor: 9259n,
        toAddress: null,
        withdrawToSameAddress: false,
        debit: { currency: "EUR", amountMinor: 9259n },
      },
    });
    expect(planRefund(facts({ invoice: autoconverted }))).toMatchObject({
      ok: true,
      value: { currency: "USDT", amountMinor: 99_991_800n, debit: { currency: "EUR", amountMinor: 9259n } },
    });
  });

  it("crypto refunds paid_amount in the invoice currency; either kind debits its value in the settlement currency", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CATALOG),
        fc.constantFrom(...CATALOG),
        fc.bigInt({ min: 1n, max: 10n ** 24n }),
        fc.constantFrom("crypto" as const, "fiat" as const),
        (currency, settlement, paidMinor, type) => {
          const invoice = { ...completedUsdt, currency, settlement, paidMinor };
          const worth = settlement.ticker === currency.ticker ? paidMinor : convert(paidMinor, currency, settlement);
          fc.pre(worth > 0n);
          const plan = planRefund(facts({ type, destination: type === "crypto" ? { address: "0xa" } : null, invoice }));
          if (type === "crypto" && currency.type === "fiat") {
            expect(plan).toMatchObject({ ok: false, error: "invoice_currency_is_fiat" });
            return;
          }
          if (type === "fiat" && settlement.type !== "fiat") {
            expect(plan).toMatchObject({ ok: false, error: "settlement_not_fiat" });
            return;
          }
          if (!plan.ok) throw new Error(`refused: ${plan.error}`);
          expect(plan.value.debit).toEqual({ currency: settlement.ticker, amountMinor: worth });
          if (type === "crypto") {
            expect(plan.value).toMatchObject({ currency: currency.ticker, amountMinor: paidMinor });
          } else {
            expect(plan.value).toMatchObject({ currency: settlement.ticker, amountMinor: worth, toAddress: null });
          }
        },
      ),
    );
  });
});

describe("planRefund: payments not settled yet", () => {
  it("waits while a payment counted in paid_amount is unconfirmed or under screening", () => {
    expect(refusal({ invoice: { ...completedUsdt, unsettledPayments: 1 } })).toBe("payments_unsettled");
    expect(refusal({ type: "fiat", invoice: { ...completedUsdt, settlement: EUR, unsettledPayments: 2 } })).toBe(
      "payments_unsettled",
    );
    expect(refusal({ invoice: { ...completedUsdt, unsettledPayments: 0 } })).toBeNull();
  });
});

describe("statusAfterRefund: the invoice after one of its refunds ended", () => {
  it("leaves refund_processing: refunded once every live refund completed, completed again when one failed", () => {
    expect(statusAfterRefund("refund_processing", "completed", true)).toEqual({
      to: "refunded",
      cause: "refund_completed",
    });
    expect(statusAfterRefund("refund_processing", "completed", false)).toBeNull();
    for (const allCompleted of [true, false]) {
      expect(statusAfterRefund("refund_processing", "failed", allCompleted)).toEqual({
        to: "completed",
        cause: "refund_failed",
      });
    }
  });

  it("moves no other status (a partly refunded invoice stays completed; a resolution refund's invoice stays)", () => {
    for (const status of INVOICE_STATUSES.filter((s) => s !== "refund_processing")) {
      for (const outcome of ["completed", "failed"] as const) {
        expect(statusAfterRefund(status, outcome, true)).toBeNull();
      }
    }
  });

  it("decides only moves the state table allows", () => {
    for (const outcome of ["completed", "failed"] as const) {
      const change = statusAfterRefund("refund_processing", outcome, true);
      expect(change && checkTransition("refund_processing", change.to, change.cause).ok).toBe(true);
    }
  });
});
