// Sandbox payers (product §10): payments into an invoice, on-chain or by card, and the screening decisions on them.
import type { ServiceContext } from "../../app/context.ts";
import { AmlBody, PaymentBody, sandboxDecideAml, sandboxPay } from "../../app/sandboxPayments.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { InvoiceIdParams, InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

export function registerSandboxPayments(app: App, ctx: ServiceContext, prefix: string): void {
  const auth = merchantAuth(ctx);
  const security = [{ apiKey: [] }];

  app.post(
    `${prefix}/invoices/:id/payments`,
    {
      onRequest: [auth],
      // Every field is optional, so no body at all means "pay what is due": validate it as {}.
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
      schema: {
        operationId: "SandboxPayInvoice",
        tags: ["sandbox"],
        summary: "Simulate a payer: an on-chain payment (crypto invoice) or a card payment (fiat invoice)",
        security,
        params: InvoiceIdParams,
        body: PaymentBody,
        response: { 200: InvoiceSchema, ...problems(400, 401, 404, 409, 415, 429) },
      },
    },
    async (request) => {
      const { merchantId } = ownerOf(request);
      const loaded = valueOrProblem(await sandboxPay(ctx, merchantId, request.params.id, request.body));
      return invoiceBody(loaded, ctx.config.publicBaseUrl);
    },
  );

  app.post(
    `${prefix}/invoices/:id/aml`,
    {
      onRequest: [auth],
      schema: {
        operationId: "SandboxDecideAml",
        tags: ["sandbox"],
        summary: "Simulate screening: clear or block the flagged payments of an invoice in aml_check",
        security,
        params: InvoiceIdParams,
        body: AmlBody,
        response: { 200: InvoiceSchema, ...problems(400, 401, 404, 409, 415, 429) },
      },
    },
    async (request) => {
      const { merchantId } = ownerOf(request);
      const loaded = valueOrProblem(await sandboxDecideAml(ctx, merchantId, request.params.id, request.body.decision));
      return invoiceBody(loaded, ctx.config.publicBaseUrl);
    },
  );
}
