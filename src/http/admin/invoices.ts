// Operator API: GET /invoices/{id}: one invoice of any merchant as the operator reads it, with its payments' screening (product §21) and the stray payments to its deposit address (product §23).
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import type { IncomingPayment } from "../../domain/invoices.ts";
import { formatAmount } from "../../domain/money.ts";
import { findInvoiceById } from "../../store/invoices.ts";
import { listStrayPayments } from "../../store/strayPayments.ts";
import { InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { StrayPaymentSchema, strayPaymentBody } from "./strayPayments.ts";

/** Stray payments answered with one invoice: the newest; GET /stray-payments?invoiceId= lists as many. */
const STRAY_PAYMENTS_SHOWN = 100;

const AdminPaymentSchema = Type.Object(
  {
    id: Type.String({ description: "The payment's id: `paymentId` of POST /admin/v1/invoices/{id}/aml" }),
    txId: Type.String(),
    amount: Type.String({ description: "In the invoice's currency" }),
    fromAddress: Nullable(Type.String()),
    confirmed: Type.Boolean(),
    late: Type.Boolean({ description: "It reached the invoice after the invoice stopped taking payments" }),
    amlStatus: Type.Union(
      [
        Type.Literal("none"),
        Type.Literal("unscreened"),
        Type.Literal("flagged"),
        Type.Literal("cleared"),
        Type.Literal("blocked"),
      ],
      { description: "Screening (product §21): `flagged` waits for the operator's decision" },
    ),
    createdAt: Type.String(),
  },
  { additionalProperties: false },
);

function paymentBody(p: IncomingPayment, decimals: number) {
  return {
    id: p.id,
    txId: p.txId,
    amount: formatAmount(p.amountMinor, decimals),
    fromAddress: p.fromAddress,
    confirmed: p.confirmed,
    late: p.late === true,
    amlStatus: p.amlStatus,
    createdAt: p.createdAt,
  };
}

const AdminInvoiceSchema = Type.Object(
  {
    merchantId: Type.String(),
    invoice: InvoiceSchema,
    payments: Type.Array(AdminPaymentSchema, {
      description: "The invoice's payments, late ones included, with their screening status",
    }),
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
        payments: loaded.payments.map((p) => paymentBody(p, loaded.decimals)),
        strayPayments: strays.map(strayPaymentBody),
      };
    },
  );
}
