// Operator API: POST /invoices/{id}/resolve (product §12): accept or refund what a failed or expired invoice received.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { refuseScreenedDestination } from "../../app/screenDestination.ts";
import { findInvoiceById, type LoadedInvoice, lockInvoice } from "../../store/invoices.ts";
import { resolveInvoice } from "../../store/resolutions.ts";
import { nowIso, type Tx } from "../../store/store.ts";
import type { App } from "../app.ts";
import { InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import { Problem } from "../problem.ts";
import { problems } from "../schemas.ts";

export const ResolveBody = Type.Object(
  {
    action: Type.Union([Type.Literal("accept"), Type.Literal("refund")]),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  {
    additionalProperties: false,
    description: "`refund` needs `address`, the payer's EVM address the confirmed amount less the network fee goes to.",
  },
);

/**
 * Resolves an invoice in the caller's transaction, for the operator API and the owner's dashboard
 * alike: the body's consistency, the invoice (the merchant's own when `merchantId` is given,
 * another merchant's answering as an unknown one), then resolveInvoice. Answers the invoice after.
 */
export async function resolveInvoiceFor(
  tx: Tx,
  invoiceId: string,
  merchantId: string | undefined,
  body: Static<typeof ResolveBody>,
  publicBaseUrl: string,
): Promise<LoadedInvoice> {
  const { action, address } = body;
  if (action === "refund" && address === undefined) {
    throw new Problem("invalid_resolution", "A refund needs the payer's address.", [
      { pointer: "/address", detail: "is required with action refund" },
    ]);
  }
  if (action === "accept" && address !== undefined) {
    throw new Problem("invalid_resolution", "An accepted payment goes to the merchant: no address.", [
      { pointer: "/address", detail: "only with action refund" },
    ]);
  }
  const invoice = await lockInvoice(tx, invoiceId, merchantId);
  if (!invoice) throw new Problem("invoice_not_found", "No invoice with this id.");
  const resolved = await resolveInvoice(
    tx,
    invoice,
    action === "accept" ? { action } : { action, address: address ?? "" },
    nowIso(),
    publicBaseUrl,
  );
  if (!resolved.ok) {
    throw new Problem(
      resolved.error,
      `${resolved.detail ?? "The invoice cannot be resolved"}.`,
      resolved.error === "invalid_address" ? [{ pointer: "/address", detail: resolved.detail ?? "" }] : undefined,
    );
  }
  const after = await findInvoiceById(tx, invoice.id);
  if (!after) throw new Error("invariant violated: a resolved invoice exists");
  return after;
}

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
      // A refund to the payer is a payout like any other: its address is screened (product §21).
      if (request.body.address !== undefined) await refuseScreenedDestination(ctx, request.body.address);
      const loaded = await ctx.store.transaction((tx) =>
        resolveInvoiceFor(tx, request.params.id, undefined, request.body, ctx.config.publicBaseUrl),
      );
      return invoiceBody(loaded, ctx.config.publicBaseUrl);
    },
  );
}
