// The Invoice object of docs/merchant-api.md (PublicCreatedInvoiceResponse): its schema and how a stored invoice is answered.
import type { FastifyReply } from "fastify";
import { type Static, Type } from "typebox";
import { invoiceView } from "../domain/invoices.ts";
import { InvoiceSchema } from "../domain/publicObjects.ts";
import type { LoadedInvoice } from "../store/invoices.ts";

export { InvoiceSchema };

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
