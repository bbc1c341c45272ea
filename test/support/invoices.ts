// Helpers for invoice tests: the Invoice property set, creating and paying invoices, reading the ledger.
import { expect } from "vitest";
import { auditLedger } from "../../src/store/ledger.ts";
import { admin, merchant, type TestServer } from "./server.ts";

/** The 24 properties of the Invoice table of docs/merchant-api.md. */
export const INVOICE_KEYS = [
  "id",
  "created_at",
  "updated_at",
  "expires_at",
  "invoice_url",
  "api_source",
  "type",
  "status",
  "merchant_id",
  "settlement_currency",
  "currency",
  "convert_currency",
  "amount",
  "final_amount",
  "merchant_fee",
  "network_and_other_fees",
  "merchant_receive_amount",
  "paid_amount",
  "callback_url",
  "success_url",
  "return_url",
  "fail_url",
  "order_no",
  "description",
].sort();

export const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$/;

/** Checks the shape every Invoice answer must have. */
export function expectInvoiceShape(invoice: Record<string, unknown>): void {
  expect(Object.keys(invoice).sort()).toEqual(INVOICE_KEYS);
  for (const key of ["created_at", "updated_at"]) expect(invoice[key]).toMatch(RFC3339_MS);
  if (invoice.expires_at !== null) expect(invoice.expires_at).toMatch(RFC3339_MS);
  for (const key of [
    "amount",
    "final_amount",
    "merchant_fee",
    "network_and_other_fees",
    "merchant_receive_amount",
    "paid_amount",
  ]) {
    expect(invoice[key]).toMatch(PLAIN_DECIMAL);
  }
}

export async function createInvoice(
  server: TestServer,
  apiKey: string,
  body: Record<string, unknown>,
): Promise<Record<string, any>> {
  const answer = await merchant(server, apiKey, "POST", "/public/v1/invoices/create", body);
  if (answer.status !== 200) throw new Error(`create invoice: ${answer.status} ${answer.text}`);
  return answer.body;
}

export function pay(server: TestServer, apiKey: string, invoiceId: string, body?: Record<string, unknown>) {
  return merchant(server, apiKey, "POST", `/sandbox/v1/invoices/${invoiceId}/payments`, body);
}

export function aml(server: TestServer, apiKey: string, invoiceId: string, decision: string) {
  return merchant(server, apiKey, "POST", `/sandbox/v1/invoices/${invoiceId}/aml`, { decision });
}

/** The merchant's available balances through the operator API, as { ticker: amount }. */
export async function balances(server: TestServer, merchantId: string): Promise<Record<string, string>> {
  const answer = await admin<{ currency: string; available: string }[]>(
    server,
    "GET",
    `/merchants/${merchantId}/balances`,
  );
  expect(answer.status).toBe(200);
  return Object.fromEntries(answer.body.map((b) => [b.currency, b.available]));
}

/** The whole ledger is consistent: every currency sums to zero, cached balances match entries, none negative. */
export async function expectHealthyLedger(server: TestServer): Promise<void> {
  const audit = await auditLedger(server.ctx.store);
  for (const [currency, sum] of audit.sumsByCurrency) expect({ currency, sum }).toEqual({ currency, sum: 0n });
  expect(audit.mismatchedBalances).toEqual([]);
  expect(audit.negativeMerchantBalances).toEqual([]);
}

/** Ledger movements caused by one invoice. */
export async function invoiceMovements(server: TestServer, invoiceId: string) {
  return server.ctx.store.db
    .selectFrom("ledger_movements")
    .selectAll()
    .where("cause", "=", "invoice")
    .where("cause_id", "=", invoiceId)
    .execute();
}
