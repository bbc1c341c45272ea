// The Invoice object of docs/merchant-api.md (PublicCreatedInvoiceResponse): its schema and how a stored invoice is answered.
import type { FastifyReply } from "fastify";
import { type Static, Type } from "typebox";
import { INVOICE_STATUSES } from "../domain/invoiceStatus.ts";
import { invoiceView } from "../domain/invoices.ts";
import type { LoadedInvoice } from "../store/invoices.ts";
import { MoneyString, Nullable } from "./schemas.ts";

const DateTime = Type.String({ format: "date-time", description: "RFC 3339, UTC, milliseconds" });

/** Exactly the 24 properties of the interface's table, nullable ones always present. */
export const InvoiceSchema = Type.Object(
  {
    id: Type.String({ description: "Invoice identifier" }),
    created_at: DateTime,
    updated_at: DateTime,
    expires_at: Nullable(DateTime),
    invoice_url: Type.String({ description: "The payer's hosted page" }),
    api_source: Nullable(Type.String({ description: "Card payment provider of a fiat invoice (`sandbox_card`)" })),
    type: Type.Union([Type.Literal("b2b"), Type.Literal("b2c")]),
    status: Type.Enum(INVOICE_STATUSES),
    merchant_id: Type.String(),
    settlement_currency: Nullable(Type.String()),
    currency: Nullable(Type.String()),
    convert_currency: Nullable(Type.String()),
    amount: MoneyString,
    final_amount: MoneyString,
    merchant_fee: MoneyString,
    network_and_other_fees: MoneyString,
    merchant_receive_amount: MoneyString,
    paid_amount: MoneyString,
    callback_url: Nullable(Type.String()),
    success_url: Nullable(Type.String()),
    return_url: Nullable(Type.String()),
    fail_url: Nullable(Type.String()),
    order_no: Nullable(Type.String({ description: "The merchant's own order reference" })),
    description: Nullable(Type.String()),
  },
  { additionalProperties: false, description: "PublicCreatedInvoiceResponse" },
);

export type InvoiceBody = Static<typeof InvoiceSchema>;

/** A stored invoice as the interface answers it. */
export function invoiceBody(loaded: LoadedInvoice, publicBaseUrl: string): InvoiceBody {
  return invoiceView(loaded.invoice, loaded.decimals, loaded.payments, publicBaseUrl);
}

/**
 * The serialized answers of cached invoices. A cached LoadedInvoice is frozen and replaced, never
 * changed, when its row changes (readCache.ts), and its answer depends on nothing else (the public
 * base URL is fixed for the process): the same object always answers the same bytes.
 */
const serializedAnswers = new WeakMap<LoadedInvoice, string>();

/**
 * Answers a stored invoice as `invoiceBody` does, serializing a cached one only once (with the
 * route's own response serializer). Fastify sends a JSON-typed string as it is, so the route's
 * answer is typed as the object the string holds.
 */
export function sendInvoice(reply: FastifyReply, loaded: LoadedInvoice, publicBaseUrl: string): InvoiceBody {
  let text = serializedAnswers.get(loaded);
  if (text === undefined) {
    text = reply.serialize(invoiceBody(loaded, publicBaseUrl)) as string;
    if (Object.isFrozen(loaded)) serializedAnswers.set(loaded, text);
  }
  reply.type("application/json; charset=utf-8");
  return text as unknown as InvoiceBody;
}

export const InvoiceIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) });
