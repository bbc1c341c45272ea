// GET /public/v1/invoices/{id}/disputes: an extension (product §15, §20) that shows a card payment's disputes without changing any Invoice answer.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { disputesOfInvoice } from "../../store/cardPayments.ts";
import { findInvoiceForMerchant } from "../../store/invoices.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { DisputeSchema, disputeViews } from "../disputeViews.ts";
import { InvoiceIdParams } from "../invoiceBody.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { EXTENSIONS_TAG } from "./extensions.ts";

export function registerInvoiceDisputes(app: App, ctx: ServiceContext): void {
  app.get(
    "/public/v1/invoices/:id/disputes",
    {
      onRequest: [merchantAuth(ctx)],
      schema: {
        operationId: "ListInvoiceDisputes",
        tags: [EXTENSIONS_TAG],
        summary: "The card disputes of one of your invoices, oldest first, with what each holds of your balance",
        security: [{ apiKey: [] }],
        params: InvoiceIdParams,
        response: { 200: Type.Array(DisputeSchema), ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const { merchantId } = ownerOf(request);
      const loaded = await findInvoiceForMerchant(ctx.store, merchantId, request.params.id);
      if (!loaded) throw new Problem("invoice_not_found", "No invoice with this id.");
      return disputeViews(ctx.store, await disputesOfInvoice(ctx.store, loaded.invoice.id));
    },
  );
}
