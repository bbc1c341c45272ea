// The events of products §11 and §15: their types, which fields they carry and the exact JSON text that is listed, signed and sent.

import type { DepositObject } from "./depositAddresses.ts";
import { INVOICE_STATUSES, type InvoiceStatus } from "./invoiceStatus.ts";
import type { InvoiceView } from "./invoices.ts";
import type { PayoutOperation, PayoutOutcome } from "./payout.ts";
import type { PublicRefundRequestObject, PublicWithdrawalRequestObject } from "./payoutRequests.ts";
import { assert } from "./result.ts";
import { SUBSCRIPTION_EVENT_TYPES, type SubscriptionEventType, type SubscriptionObject } from "./subscriptions.ts";

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
 * The event of a settled withdrawal or refund (product §15): `withdrawal.completed`, `refund.failed`,
 * …, and of a refund claimed by its payer or whose claim expired (product §25).
 */
export type PayoutEventType =
  | `${PayoutOperation}.${PayoutOutcome}`
  | `${PayoutOperation}.${ApprovalStep}`
  | "refund.claimed"
  | "refund.expired";

/** The steps of a payout over its merchant's payout policy (product §31), each an event of its operation. */
export type ApprovalStep = "awaiting_approval" | "approved" | "rejected";

export function payoutEventType(operation: PayoutOperation, outcome: PayoutOutcome): PayoutEventType {
  return `${operation}.${outcome}`;
}

/**
 * The steps of a held deposit's refund (product §30): each where an invoice's refund records
 * `refund.<step>` (claim, payout, approval), in the same order.
 */
export const DEPOSIT_REFUND_STEPS = [
  "completed",
  "failed",
  "claimed",
  "expired",
  "awaiting_approval",
  "approved",
  "rejected",
] as const;

export type RefundStep = (typeof DEPOSIT_REFUND_STEPS)[number];

/**
 * The events of a customer's deposit (product §30): credited, undone by a reorganisation, and each
 * step of its refund (`deposit.refund_<step>`, carrying the deposit with its refund: never a refund
 * request object, whose invoice_id a deposit has none for).
 */
export type DepositEventType = "deposit.completed" | "deposit.reversed" | `deposit.refund_${RefundStep}`;

export function depositRefundEventType(step: RefundStep): DepositEventType {
  return `deposit.refund_${step}`;
}

/** Every event type, in a fixed order (the `type` filter of GET /public/v1/events). */
export const EVENT_TYPES = [
  ...INVOICE_STATUSES.map(callbackEventType),
  "withdrawal.completed",
  "withdrawal.failed",
  "refund.completed",
  "refund.failed",
  "refund.claimed",
  "refund.expired",
  "withdrawal.awaiting_approval",
  "withdrawal.approved",
  "withdrawal.rejected",
  "refund.awaiting_approval",
  "refund.approved",
  "refund.rejected",
  ...SUBSCRIPTION_EVENT_TYPES,
  "deposit.completed",
  "deposit.reversed",
  ...DEPOSIT_REFUND_STEPS.map(depositRefundEventType),
] as const satisfies readonly (CallbackEventType | PayoutEventType | SubscriptionEventType | DepositEventType)[];

export type EventType = (typeof EVENT_TYPES)[number];

function assertEventTime(createdAt: string): void {
  assert(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(createdAt),
    "created_at is RFC 3339 UTC with milliseconds",
  );
}

/**
 * The body of a withdrawal or refund event, serialized once: `data.request` is the object exactly
 * as the signed operation (and GET /withdrawals/{id} or /refunds/{id}) answers it at that moment.
 */
export function payoutEventBody(
  id: string,
  type: PayoutEventType,
  request: PublicWithdrawalRequestObject | PublicRefundRequestObject,
  createdAt: string,
): string {
  assertEventTime(createdAt);
  return JSON.stringify({ type, id, created_at: createdAt, data: { request } });
}

/** The body of a subscription event (product §29): `data.subscription` as GET /subscriptions/{id} answers it then. */
export function subscriptionEventBody(
  id: string,
  type: SubscriptionEventType,
  subscription: SubscriptionObject,
  createdAt: string,
): string {
  assertEventTime(createdAt);
  return JSON.stringify({ type, id, created_at: createdAt, data: { subscription } });
}

/**
 * The body of an event, serialized once: every attempt sends (and signs) these exact bytes.
 * `createdAt` is RFC 3339 with milliseconds, like every timestamp of the service.
 */
export function callbackEventBody(id: string, invoice: InvoiceView, createdAt: string): string {
  assertEventTime(createdAt);
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

/** The body of a deposit event (product §30): `data.deposit` as GET /public/v1/deposits/{id} answers it then. */
export function depositEventBody(
  id: string,
  type: DepositEventType,
  deposit: DepositObject,
  createdAt: string,
): string {
  assertEventTime(createdAt);
  return JSON.stringify({ type, id, created_at: createdAt, data: { deposit } });
}
