// Operator API: GET /invoices/{id}: one invoice of any merchant as the operator reads it, with the stray payments to its deposit address (product §23).
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { findInvoiceById } from "../../store/invoices.ts";
import { listStrayPayments } from "../../store/strayPayments.ts";
import type { App } from "../app.ts";
import { InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import { Problem } from "../problem.ts";
import { problems } from "../schemas.ts";
import { StrayPaymentSchema, strayPaymentBody } from "./strayPayments.ts";

/** Stray payments answered with one invoice: the newest; GET /stray-payments?invoiceId= lists as many. */
const STRAY_PAYMENTS_SHOWN = 100;

const AdminInvoiceSchema = Type.Object(
  {
    merchantId: Type.String(),
    invoice: InvoiceSchema,
    strayPayments: Type.Array(StrayPaymentSchema, {
      description:
        "Transfers to the invoice's deposit address it does not take (another network than its internalTicker's, or another currency), newest first, at most 100; never credited",
    }),
  },
  { additionalProperties: false },
);

export function registerAdminInvoices(app: App, ctx: ServiceContext): void {
  app.get(
    "/invoices/:id",
    {
      schema: {
        operationId: "AdminGetInvoice",
        tags: ["operator"],
        summary: "One invoice of any merchant, with the stray payments to its deposit address",
        security: [{ adminToken: [] }],
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) }),
        response: { 200: AdminInvoiceSchema, ...problems(401, 404) },
      },
    },
    async (request) => {
      const [loaded, strays] = await Promise.all([
        findInvoiceById(ctx.store, request.params.id),
        listStrayPayments(ctx.store, { invoiceId: request.params.id, limit: STRAY_PAYMENTS_SHOWN }),
      ]);
      if (!loaded) throw new Problem("invoice_not_found", "No invoice with this id.");
      return {
        merchantId: loaded.invoice.merchantId,
        invoice: invoiceBody(loaded, ctx.config.publicBaseUrl),
        strayPayments: strays.map(strayPaymentBody),
      };
    },
  );
}
