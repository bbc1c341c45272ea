// The callback event body: product §11's envelope around exactly the interface's Invoice fields.
import { describe, expect, it } from "vitest";
import { CALLBACK_INVOICE_FIELDS, callbackEventBody, callbackEventType } from "../../src/domain/callbackEvent.ts";
import { INVOICE_STATUSES } from "../../src/domain/invoiceStatus.ts";
import type { InvoiceView } from "../../src/domain/invoices.ts";

const invoice: InvoiceView = {
  id: "inv_1",
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:05:00.000Z",
  expires_at: "2026-01-01T01:00:00.000Z",
  invoice_url: "http://127.0.0.1:8080/pay/inv_1",
  api_source: null,
  type: "b2c",
  status: "completed",
  merchant_id: "m_1",
  settlement_currency: "USDT",
  currency: "USDT",
  convert_currency: null,
  amount: "100",
  final_amount: "100",
  merchant_fee: "1",
  network_and_other_fees: "1",
  merchant_receive_amount: "98",
  paid_amount: "100",
  callback_url: "https://shop.example/cb",
  success_url: null,
  return_url: null,
  fail_url: null,
  order_no: "A-1",
  description: null,
};

describe("callbackEventBody", () => {
  it("wraps the invoice as product §11 says, with the interface's 24 fields in order", () => {
    const body = callbackEventBody("evt_1", invoice, "2026-01-01T00:05:00.000Z");
    const parsed = JSON.parse(body);
    expect(Object.keys(parsed)).toEqual(["type", "id", "created_at", "data"]);
    expect(parsed).toEqual({
      type: "invoice.completed",
      id: "evt_1",
      created_at: "2026-01-01T00:05:00.000Z",
      data: { invoice },
    });
    expect(Object.keys(parsed.data.invoice)).toEqual([...CALLBACK_INVOICE_FIELDS]);
    expect(CALLBACK_INVOICE_FIELDS).toHaveLength(24);
    expect(body).toBe(JSON.stringify(parsed));
  });

  it("carries nothing beyond the Invoice fields, whatever the caller's object has", () => {
    const wider = { ...invoice, deposit_address: "0xsecret", internal: 1 } as InvoiceView;
    const parsed = JSON.parse(callbackEventBody("evt_2", wider, "2026-01-01T00:05:00.000Z"));
    expect(Object.keys(parsed.data.invoice)).toEqual([...CALLBACK_INVOICE_FIELDS]);
  });

  it("refuses an invoice missing a field (it would silently vanish from the JSON) and a malformed time", () => {
    const { description: _, ...missing } = invoice;
    expect(() => callbackEventBody("evt_3", missing as InvoiceView, "2026-01-01T00:05:00.000Z")).toThrow(/description/);
    expect(() => callbackEventBody("evt_3", invoice, "2026-01-01T00:05:00Z")).toThrow(/invariant violated/);
  });
});

describe("callbackEventType", () => {
  it("names an event after each of the nine statuses, and nothing else", () => {
    expect(INVOICE_STATUSES.map(callbackEventType)).toEqual([
      "invoice.pending",
      "invoice.processing",
      "invoice.completed",
      "invoice.refund_processing",
      "invoice.failed",
      "invoice.expired",
      "invoice.refunded",
      "invoice.aml_check",
      "invoice.aml_block",
    ]);
    expect(() => callbackEventType("paid" as never)).toThrow(/invariant violated/);
  });
});
