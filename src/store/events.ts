// Event repository (product §15): every event of a merchant, written in the transaction of the change it reports; the source callbacks are queued from.
import { randomBytes } from "node:crypto";
import {
  callbackEventBody,
  callbackEventType,
  type DepositEventType,
  depositEventBody,
  type EventType,
  type PayoutEventType,
  payoutEventBody,
  subscriptionEventBody,
} from "../domain/callbackEvent.ts";
import type { DepositObject } from "../domain/depositAddresses.ts";
import type { InvoiceView } from "../domain/invoices.ts";
import type { PublicRefundRequestObject, PublicWithdrawalRequestObject } from "../domain/payoutRequests.ts";
import { ok, type Result } from "../domain/result.ts";
import type { SubscriptionEventType, SubscriptionObject } from "../domain/subscriptions.ts";
import { type CallbackEvent, queueCallback } from "./callbacks.ts";
import { type ListError, merchantPage, type Page, type PageWindow } from "./keyset.ts";
import type { Tx } from "./store.ts";

/** An event as GET /public/v1/events lists it: `body` is its exact JSON text (also its callback's body). */
export interface StoredEvent {
  id: string;
  merchantId: string;
  type: EventType;
  /** The invoice id, or the (lowercased) request id of a withdrawal or refund. */
  subjectId: string;
  body: string;
  createdAt: string;
}

/** An event and, when a URL receives it, its callback delivery (same id). */
export interface RecordedEvent {
  event: StoredEvent;
  callback: CallbackEvent | null;
}

/** Event ids are what merchants deduplicate on (`webhook-id`): 128 random bits, never reused. */
export function newEventId(): string {
  return `evt_${randomBytes(16).toString("hex")}`;
}

interface NewEvent {
  merchantId: string;
  type: EventType;
  subjectId: string;
  /** The invoice of an invoice event (the operator lists an invoice's callbacks by it). */
  invoiceId: string | null;
  /** Serializes the event once its id is known. */
  body: (id: string) => string;
}

/**
 * Writes an event in the caller's transaction (the outbox): it exists exactly when the change it
 * reports commits. With a callback URL, its delivery is queued in the same transaction, with the
 * same id and the same bytes, so the list and the callbacks cannot disagree.
 */
async function recordEvent(tx: Tx, e: NewEvent, callbackUrl: string | null, now: string): Promise<RecordedEvent> {
  const id = newEventId();
  const event: StoredEvent = {
    id,
    merchantId: e.merchantId,
    type: e.type,
    subjectId: e.subjectId,
    body: e.body(id),
    createdAt: now,
  };
  await tx.db
    .insertInto("events")
    .values({
      id,
      merchant_id: event.merchantId,
      type: event.type,
      subject_id: event.subjectId,
      body: event.body,
      created_at: now,
    })
    .execute();
  const callback =
    callbackUrl === null ? null : await queueCallback(tx, { ...event, invoiceId: e.invoiceId }, callbackUrl, now);
  return { event, callback };
}

/**
 * The event of an invoice status change; its callback goes to the invoice's own callback_url (if
 * any). The invoice transition calls this after its UPDATE of the invoice row: that row lock orders
 * concurrent changes of one invoice, so callbacks get their sequence (delivery order) in commit order.
 */
export function recordInvoiceEvent(tx: Tx, invoice: InvoiceView, now: string): Promise<RecordedEvent> {
  return recordEvent(
    tx,
    {
      merchantId: invoice.merchant_id,
      type: callbackEventType(invoice.status),
      subjectId: invoice.id,
      invoiceId: invoice.id,
      body: (id) => callbackEventBody(id, invoice, now),
    },
    invoice.callback_url,
    now,
  );
}

export interface PayoutEventInput {
  merchantId: string;
  type: PayoutEventType;
  /** The request id (lowercased) of the withdrawal or refund. */
  subjectId: string;
  /** The public object after settlement, as GET /withdrawals/{id} or /refunds/{id} answers it. */
  request: PublicWithdrawalRequestObject | PublicRefundRequestObject;
  /** The merchant's default callback URL, or null. */
  callbackUrl: string | null;
}

/** The event of a settled withdrawal or refund, written in the settlement's transaction. */
export function recordPayoutEvent(tx: Tx, input: PayoutEventInput, now: string): Promise<RecordedEvent> {
  return recordEvent(
    tx,
    {
      merchantId: input.merchantId,
      type: input.type,
      subjectId: input.subjectId,
      invoiceId: null,
      body: (id) => payoutEventBody(id, input.type, input.request, now),
    },
    input.callbackUrl,
    now,
  );
}

/** A subscription's event (product §29), written in the transaction of the change; its callback goes to the subscription's callbackUrl. */
export function recordSubscriptionEvent(
  tx: Tx,
  type: SubscriptionEventType,
  subscription: SubscriptionObject,
  input: { merchantId: string; now: string },
): Promise<RecordedEvent> {
  return recordEvent(
    tx,
    {
      merchantId: input.merchantId,
      type,
      subjectId: subscription.id,
      invoiceId: null,
      body: (id) => subscriptionEventBody(id, type, subscription, input.now),
    },
    subscription.callbackUrl,
    input.now,
  );
}

/** A customer's deposit's event (product §30), written in the transaction of the change; its callback goes to `callbackUrl`. */
export function recordDepositEvent(
  tx: Tx,
  type: DepositEventType,
  deposit: DepositObject,
  input: { merchantId: string; callbackUrl: string | null; now: string },
): Promise<RecordedEvent> {
  return recordEvent(
    tx,
    {
      merchantId: input.merchantId,
      type,
      subjectId: deposit.id,
      invoiceId: null,
      body: (id) => depositEventBody(id, type, deposit, input.now),
    },
    input.callbackUrl,
    input.now,
  );
}

export interface EventListFilter extends PageWindow {
  type?: EventType | undefined;
}

/** A page of the merchant's events, newest first (`created_at`, then id, descending). */
export async function listEvents(
  tx: Tx,
  merchantId: string,
  filter: EventListFilter,
): Promise<Result<Page<StoredEvent>, ListError>> {
  const page = await merchantPage(
    tx,
    { table: "events", idColumn: "id", columns: { createdAt: "created_at", id: "id" }, noun: "an event" },
    merchantId,
    filter,
    tx.db
      .selectFrom("events")
      .selectAll()
      .where("merchant_id", "=", merchantId)
      .$if(filter.type !== undefined, (qb) => qb.where("type", "=", filter.type as EventType)),
  );
  if (!page.ok) return page;
  return ok({
    data: page.value.data.map((r) => ({
      id: r.id,
      merchantId: r.merchant_id,
      type: r.type as EventType,
      subjectId: r.subject_id,
      body: r.body,
      createdAt: r.created_at,
    })),
    hasMore: page.value.hasMore,
  });
}
