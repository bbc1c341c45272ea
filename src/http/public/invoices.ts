// Invoices: CreateInvoice, EstimateFees, GetInvoice and GetInvoicesByOrderId of docs/merchant-api.md.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { CreateInvoiceBody, createInvoiceFor, EstimateFeesBody, estimateFees } from "../../app/createInvoice.ts";
import { findInvoiceForMerchant, listInvoicesByOrderNo } from "../../store/invoices.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { InvoiceIdParams, InvoiceSchema, invoiceBody, sendInvoice } from "../invoiceBody.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

/** Every route here: the merchant's API key. */
const security = [{ apiKey: [] }];

const FeeEstimateSchema = Type.Object(
  {
    amount: Type.Number(),
    finalPrice: Type.Number({ description: "final_amount of the invoice" }),
    fee: Type.Number({ description: "merchant_fee" }),
    summaryFee: Type.Optional(Type.Number({ description: "merchant_fee + network_and_other_fees" })),
    merchantReceiveAmount: Type.Number(),
  },
  { additionalProperties: false, description: "CalculatedInvoiceFeeResult" },
);

export function registerInvoices(app: App, ctx: ServiceContext): void {
  const auth = merchantAuth(ctx);
  registerCreateInvoice(app, ctx, auth);
  registerEstimateFees(app, ctx, auth);
  registerGetInvoice(app, ctx, auth);
  registerGetInvoicesByOrderId(app, ctx, auth);
}

function registerCreateInvoice(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.post(
    "/public/v1/invoices/create",
    {
      onRequest: [auth],
      schema: {
        operationId: "CreateInvoice",
        tags: ["invoices"],
        summary: "Create an invoice",
        security,
        body: CreateInvoiceBody,
        response: { 200: InvoiceSchema, ...problems(400, 401, 409, 413, 415, 429, 503) },
      },
    },
    async (request) => {
      const loaded = valueOrProblem(await createInvoiceFor(ctx, ownerOf(request).merchantId, request.body));
      return invoiceBody(loaded, ctx.config.publicBaseUrl);
    },
  );
}

function registerEstimateFees(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.post(
    "/public/v1/invoices/estimateFees",
    {
      onRequest: [auth],
      schema: {
        operationId: "EstimateFees",
        tags: ["invoices"],
        summary: "The fees and amounts an invoice with these fields would have",
        security,
        body: EstimateFeesBody,
        response: { 200: FeeEstimateSchema, ...problems(400, 401, 413, 415, 429, 503) },
      },
    },
    async (request) => {
      return valueOrProblem(await estimateFees(ctx, ownerOf(request).merchantId, request.body));
    },
  );
}

function registerGetInvoice(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.get(
    "/public/v1/invoices/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetInvoice",
        tags: ["invoices"],
        summary: "An invoice of this merchant",
        security,
        params: InvoiceIdParams,
        response: { 200: InvoiceSchema, ...problems(400, 401, 404, 429) },
      },
    },
    async (request, reply) => {
      const loaded = await findInvoiceForMerchant(ctx.store, ownerOf(request).merchantId, request.params.id);
      if (!loaded) throw new Problem("invoice_not_found", "No invoice with this id.");
      return sendInvoice(reply, loaded, ctx.config.publicBaseUrl);
    },
  );
}

function registerGetInvoicesByOrderId(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.get(
    "/public/v1/invoices/byOrder/:order_no",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetInvoicesByOrderId",
        tags: ["invoices"],
        summary: "This merchant's invoices with an order number, newest first; [] when there are none",
        security,
        params: Type.Object({ order_no: Type.String({ minLength: 1, maxLength: 500 }) }),
        response: { 200: Type.Array(InvoiceSchema), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const list = await listInvoicesByOrderNo(ctx.store, ownerOf(request).merchantId, request.params.order_no);
      return list.map((loaded) => invoiceBody(loaded, ctx.config.publicBaseUrl));
    },
  );
}
