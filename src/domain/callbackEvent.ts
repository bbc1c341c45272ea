// The callback event of product §11: which invoice fields it carries and the exact JSON text that is signed and sent.
import { assert } from "./result.ts";

export const INVOICE_STATUSES = [
  "pending",
  "processing",
  "completed",
  "refund_processing",
  "failed",
  "expired",
  "refunded",
  "aml_check",
  "aml_block",
] as const;

export type CallbackInvoiceStatus = (typeof INVOICE_STATUSES)[number];

/** The Invoice object of interface.md (PublicCreatedInvoiceResponse), as answered by GetInvoice. */
export interface CallbackInvoice {
  id: string;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  invoice_url: string;
  api_source: string | null;
  type: string;
  status: CallbackInvoiceStatus;
  merchant_id: string;
  settlement_currency: string | null;
  currency: string | null;
  convert_currency: string | null;
  amount: string;
  final_amount: string;
  merchant_fee: string;
  network_and_other_fees: string;
  merchant_receive_amount: string;
  paid_amount: string;
  callback_url: string | null;
  success_url: string | null;
  return_url: string | null;
  fail_url: string | null;
  order_no: string | null;
  description: string | null;
}

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
] as const satisfies readonly (keyof CallbackInvoice)[];

export type CallbackEventType = `invoice.${CallbackInvoiceStatus}`;

export function callbackEventType(status: CallbackInvoiceStatus): CallbackEventType {
  assert((INVOICE_STATUSES as readonly string[]).includes(status), `${status} is an invoice status`);
  return `invoice.${status}`;
}

/**
 * The body of an event, serialized once: every attempt sends (and signs) these exact bytes.
 * `createdAt` is RFC 3339 with milliseconds, like every timestamp of the service.
 */
export function callbackEventBody(id: string, invoice: CallbackInvoice, createdAt: string): string {
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
