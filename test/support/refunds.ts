// Fixtures for refund tests: completed invoices, funding, RefundCrypto/RefundFiat signed from the interface text, and what the store holds.
import { expect } from "vitest";
import { createInvoice, pay } from "./invoices.ts";
import { admin, createMerchant, merchant, type TestServer } from "./server.ts";
import { type SignedCall, type SignedCallOptions, signedCall } from "./signing.ts";

export const REFUND_CRYPTO_PATH = "/public/v1/refunds/refundCrypto";
export const REFUND_FIAT_PATH = "/public/v1/refunds/refundFiat";

/** The twelve properties of the Refund request table of docs/merchant-api.md. */
export const REFUND_KEYS = [
  "id",
  "invoice_id",
  "type",
  "currency",
  "amount",
  "to_address",
  "withdraw_to_same_address",
  "status",
  "payout_processor_status",
  "payout_processor_tx_id",
  "created_at",
  "updated_at",
];

export const RFC3339_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

export interface RefundMerchant {
  id: string;
  apiKey: string;
  secretKey: string;
}

/** A merchant without a merchant fee, so that its credit is `paid_amount` less network fees only. */
export function feeFreeMerchant(server: TestServer, fields: Record<string, unknown> = {}): Promise<RefundMerchant> {
  return createMerchant(server, { feePercent: "0", ...fields });
}

/** Creates an invoice and pays it in full (confirmed) through the sandbox, or with the given payments in turn. */
export async function completedInvoice(
  server: TestServer,
  m: RefundMerchant,
  body: Record<string, unknown>,
  payments: Record<string, unknown>[] = [{}],
): Promise<Record<string, any>> {
  const invoice = await createInvoice(server, m.apiKey, body);
  let last: Record<string, any> = invoice;
  for (const payment of payments) {
    const paid = await pay(server, m.apiKey, invoice.id, payment);
    if (paid.status !== 200) throw new Error(`pay: ${paid.status} ${paid.text}`);
    last = paid.body;
  }
  expect(last.status).toBe("completed");
  return last;
}

/** Moves `amount` (may start with `-`) of `currency` in or out of the merchant's balance. */
export async function adjust(server: TestServer, merchantId: string, currency: string, amount: string): Promise<void> {
  const adjusted = await admin(server, "POST", `/merchants/${merchantId}/balance-adjustments`, {
    currency,
    amount,
    memo: "refund test",
  });
  if (adjusted.status !== 200) throw new Error(`adjust: ${adjusted.status} ${adjusted.text}`);
}

function signedRefund(path: string) {
  return (
    server: TestServer,
    m: RefundMerchant,
    body: Record<string, unknown>,
    options: Partial<SignedCallOptions> = {},
  ): Promise<SignedCall> =>
    signedCall(server.baseUrl, { apiKey: m.apiKey, secret: m.secretKey, path, body, ...options });
}

export const refundCrypto = signedRefund(REFUND_CRYPTO_PATH);
export const refundFiat = signedRefund(REFUND_FIAT_PATH);
/** CreateRefund (product §25): a refund of part of what was paid. */
export const createRefund = signedRefund("/public/v1/refunds/create");

export async function invoiceStatus(server: TestServer, m: RefundMerchant, invoiceId: string): Promise<string> {
  const answer = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoiceId}`);
  expect(answer.status).toBe(200);
  return answer.body.status;
}

/** The sandbox payout processor reports the outcome of the payout of `requestId`. */
export function payoutOutcome(
  server: TestServer,
  m: RefundMerchant,
  requestId: string,
  body: { status: "completed" | "failed"; txId?: string },
) {
  return merchant(server, m.apiKey, "POST", `/sandbox/v1/payouts/${requestId}/outcome`, body);
}

/** The ledger entries of the movement (cause, request id, kind), as `account currency amount` lines, sorted. */
export async function movementEntries(server: TestServer, requestId: string, kind: string): Promise<string[]> {
  const rows = await server.ctx.store.db
    .selectFrom("ledger_entries")
    .innerJoin("ledger_movements", "ledger_movements.id", "ledger_entries.movement_id")
    .select(["ledger_entries.account", "ledger_entries.currency", "ledger_entries.amount"])
    .where("ledger_movements.cause", "=", "refund")
    .where("ledger_movements.cause_id", "=", requestId.toLowerCase())
    .where("ledger_movements.kind", "=", kind)
    .execute();
  return rows.map((r) => `${r.account} ${r.currency} ${r.amount}`).sort();
}

/** The callback events recorded for an invoice, in recording order. */
export async function callbackTypes(server: TestServer, invoiceId: string): Promise<string[]> {
  const rows = await server.ctx.store.db
    .selectFrom("callback_events")
    .select("type")
    .where("invoice_id", "=", invoiceId)
    .orderBy("seq")
    .execute();
  return rows.map((r) => r.type);
}
