// Operator API: GET /invoices/{id}/callbacks, an invoice's callback events with every attempt.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { invoiceExists, listInvoiceCallbacks } from "../../store/callbacks.ts";
import { adminCallbackEvent, CallbackEventSchema } from "../callbackSchemas.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

export function registerAdminInvoiceCallbacks(app: App, ctx: ServiceContext): void {
  app.get(
    "/invoices/:id/callbacks",
    {
      schema: {
        operationId: "AdminListInvoiceCallbacks",
        summary: "An invoice's callback events and their attempts",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        description: "The invoice's callback events, oldest first, each with its attempts in order.",
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) }),
        response: { 200: Type.Array(CallbackEventSchema), ...problems(401, 404) },
      },
    },
    async (request) => {
      const events = await ctx.store.transaction(async (tx) => {
        if (!(await invoiceExists(tx, request.params.id))) {
          throw new Problem("invoice_not_found", "No invoice with this id.");
        }
        return listInvoiceCallbacks(tx, request.params.id);
      });
      return events.map(adminCallbackEvent);
    },
  );
}
