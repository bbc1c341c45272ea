// Operator API: POST /invoices/{id}/resolve (product §12): accept or refund what a failed or expired invoice received.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { ResolveBody, resolveInvoiceOf } from "../../app/resolveInvoice.ts";
import { InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

export function registerAdminResolve(app: App, ctx: ServiceContext): void {
  app.post(
    "/invoices/:id/resolve",
    {
      schema: {
        operationId: "AdminResolveInvoice",
        tags: ["operator"],
        summary: "Resolve a late, partial or stranded payment: accept it (complete the invoice) or refund it",
        security: [{ adminToken: [] }],
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) }),
        body: ResolveBody,
        response: { 200: InvoiceSchema, ...problems(400, 401, 404, 409, 415) },
      },
    },
    async (request) => {
      const loaded = valueOrProblem(await resolveInvoiceOf(ctx, request.params.id, undefined, request.body));
      return invoiceBody(loaded, ctx.config.publicBaseUrl);
    },
  );
}
