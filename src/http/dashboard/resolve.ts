// Dashboard: an owner resolves a late, partial or stranded payment (product §12 and §14) with the operator API's own rule; step-up, audited.

import type { ServiceContext } from "../../app/context.ts";
import { ResolveBody, resolveInvoiceOf } from "../../app/resolveInvoice.ts";
import { InvoiceIdParams, InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { security, tags } from "./moneyCommon.ts";
import { type DashboardScope, requireRole, requireStepUp } from "./session.ts";

export function registerDashboardResolve(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/invoices/:id/resolve",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardResolveInvoice",
        tags,
        security,
        summary:
          "Resolve what a failed or expired invoice received: accept it (the invoice completes) or refund it to an address; once (owners; step-up)",
        params: InvoiceIdParams,
        body: ResolveBody,
        response: { 200: InvoiceSchema, ...problems(400, 401, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "moveMoney");
      requireStepUp(request);
      const how = request.body.action === "accept" ? "accept" : `refund to ${request.body.address}`;
      const outcome = await resolveInvoiceOf(ctx, request.params.id, user.merchantId, request.body, (tx, resolved) =>
        record(request, tx, "invoice.resolve", `${resolved.invoice.id}: ${how}`),
      );
      const loaded = valueOrProblem(outcome);
      return invoiceBody(loaded, ctx.config.publicBaseUrl);
    },
  );
}
