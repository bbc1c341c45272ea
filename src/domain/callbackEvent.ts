// The callback event of product §11: which invoice fields it carries and the exact JSON text that is signed and sent.

import { INVOICE_STATUSES, type InvoiceStatus } from "./invoiceStatus.ts";
import type { InvoiceView } from "./invoices.ts";
import { assert } from "./result.ts";

/** The Invoice fields in the interface's order; the event carries exactly these, whatever else the caller's object has. */
export const CALLBACK_INVOICE_FIELDS = [
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
] as const satisfies readonly (keyof InvoiceView)[];

export type CallbackEventType = `invoice.${InvoiceStatus}`;

export function callbackEventType(status: InvoiceStatus): CallbackEventType {
  assert((INVOICE_STATUSES as readonly string[]).includes(status), `${status} is an invoice status`);
  return `invoice.${status}`;
}

/**
 * The body of an event, serialized once: every attempt sends (and signs) these exact bytes.
 * `createdAt` is RFC 3339 with milliseconds, like every timestamp of the service.
 */
export function callbackEventBody(id: string, invoice: InvoiceView, createdAt: string): string {
  assert(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(createdAt),
    "created_at is RFC 3339 UTC with milliseconds",
  );
  const data: Record<string, unknown> = {};
  for (const field of CALLBACK_INVOICE_FIELDS) {
    // undefined would silently drop the field from the JSON; nullable fields are null, never absent.
    assert(invoice[field] !== undefined, `the invoice has its ${field} field`);
    data[field] = invoice[field];
  }
  return JSON.stringify({
    type: callbackEventType(invoice.status),
    id,
    created_at: createdAt,
    data: { invoice: data },
  });
}
