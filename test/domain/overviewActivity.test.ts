// The overview's pure parts: event sentences, the 30-day window, outcome groups and exact volume sums.
import { describe, expect, it } from "vitest";
import { describeEvent } from "../../src/domain/activity.ts";
import { chartDays, invoiceOutcome, overviewChart } from "../../src/domain/overviewChart.ts";

describe("describeEvent", () => {
  const invoice = (data: Record<string, unknown>) => JSON.stringify({ data: { invoice: data } });
  it("says what happened to an invoice, with its amounts and order", () => {
    const body = invoice({ currency: "USDT", final_amount: "49.9", paid_amount: "20", order_no: "A-7" });
    expect(describeEvent("invoice.processing", body)).toBe(
      "The invoice for order A-7 received 20 USDT of 49.9 USDT; it waits for confirmations or the rest.",
    );
    expect(describeEvent("invoice.failed", body)).toBe(
      "The invoice for order A-7 expired part-paid: 20 USDT of 49.9 USDT received.",
    );
    expect(describeEvent("invoice.expired", invoice({ currency: "ETH", final_amount: "0.1", order_no: null }))).toBe(
      "An invoice of 0.1 ETH expired unpaid.",
    );
  });
  it("says what happened to a withdrawal or a refund", () => {
    const body = JSON.stringify({ data: { request: { amount: "25", currency: "USDT" } } });
    expect(describeEvent("withdrawal.completed", body)).toBe("A withdrawal of 25 USDT was paid out.");
    expect(describeEvent("refund.failed", body)).toBe(
      "A refund of 25 USDT failed; the amount is back in your balance.",
    );
  });
  it("says what happened to a subscription, naming its customer", () => {
    const body = (openInvoice: unknown) =>
      JSON.stringify({ data: { subscription: { customer: { reference: "cust-7" }, period: 2, openInvoice } } });
    expect(describeEvent("subscription.invoice_created", body({ amount: "10", currency: "USDT", period: 3 }))).toBe(
      "cust-7's subscription has a new invoice of 10 USDT for period 3.",
    );
    expect(describeEvent("subscription.renewed", body(null))).toBe("cust-7's subscription was paid for period 2.");
    expect(describeEvent("subscription.past_due", body(null))).toBe(
      "cust-7's subscription is past due: period 2 is not paid yet.",
    );
    expect(describeEvent("subscription.canceled", "not json")).toBe("A subscription was canceled.");
  });
  it("says what happened to a customer's deposit, naming its customer and network", () => {
    const body = JSON.stringify({
      data: { deposit: { customer: "cust-9", amount: "100", currency: "USDT", network: "base", creditedAmount: "97" } },
    });
    expect(describeEvent("deposit.completed", body)).toBe(
      "cust-9's deposit of 100 USDT on base was credited: 97 after fees.",
    );
    expect(describeEvent("deposit.reversed", body)).toBe(
      "cust-9's deposit of 100 USDT on base was undone by a reorganisation of the chain; nothing was credited.",
    );
    expect(describeEvent("deposit.completed", "not json")).toBe("A deposit of ? was credited.");
    expect(describeEvent("deposit.refund_completed", body)).toBe(
      "cust-9's deposit of 100 USDT on base was refunded to its payer.",
    );
    expect(describeEvent("deposit.refund_expired", body)).toBe(
      "cust-9's deposit of 100 USDT on base: nobody claimed its refund in time; it is held again.",
    );
  });
  it("still gives a sentence for a body it cannot read", () => {
    expect(describeEvent("invoice.completed", "not json")).toBe("An invoice was paid.");
  });
});

describe("overviewChart", () => {
  it("spans 30 UTC days ending today", () => {
    const days = chartDays(new Date("2026-03-01T23:59:59.999Z"));
    expect(days).toHaveLength(30);
    expect(days[0]).toBe("2026-01-31");
    expect(days.at(-1)).toBe("2026-03-01");
  });
  it("groups outcomes and sums completed volume exactly, ignoring days outside the window", () => {
    expect(["completed", "refunded", "refund_processing"].map(invoiceOutcome)).toEqual([
      "completed",
      "completed",
      "completed",
    ]);
    expect(["expired", "failed"].map(invoiceOutcome)).toEqual(["expired", "expired"]);
    expect(["pending", "processing", "aml_check", "aml_block"].map(invoiceOutcome)).toEqual([
      "other",
      "other",
      "other",
      "other",
    ]);
    const days = ["2026-01-01", "2026-01-02"];
    const big = 9_223_372_036_854_775_807n;
    const chart = overviewChart(
      days,
      [
        { day: "2026-01-01", currency: "ETH", status: "completed", invoices: 2, finalAmountMinor: big },
        { day: "2026-01-02", currency: "ETH", status: "refunded", invoices: 1, finalAmountMinor: big },
        { day: "2026-01-02", currency: "ETH", status: "expired", invoices: 3, finalAmountMinor: 5n },
        { day: "2025-12-31", currency: "USDT", status: "completed", invoices: 9, finalAmountMinor: 5n },
      ],
      () => 18,
    );
    expect(chart.outcomes).toEqual([
      { day: "2026-01-01", completed: 2, expired: 0, other: 0 },
      { day: "2026-01-02", completed: 1, expired: 3, other: 0 },
    ]);
    expect(chart.volume).toEqual([
      { currency: "ETH", total: "18.446744073709551614", perDay: ["9.223372036854775807", "9.223372036854775807"] },
    ]);
  });
});
