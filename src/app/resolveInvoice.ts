// Resolve an invoice (the operator API and the owner's dashboard): accept or refund what a failed or expired invoice received (product §12).
import { type Static, Type } from "typebox";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { invariantViolation } from "../domain/result.ts";
import { findInvoiceById, type LoadedInvoice, lockInvoice } from "../store/invoices.ts";
import { type ResolutionError, resolveInvoice } from "../store/resolutions.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { payoutRailPolicy } from "./payoutProcessors.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";
import { type ScreeningRefusal, screenDestination } from "./screenDestination.ts";

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

/** What resolving an invoice refuses. */
export type ResolveRefusal = ResolutionError | "invalid_resolution" | "invoice_not_found" | ScreeningRefusal["code"];

/**
 * Resolves an invoice, for the operator API and the owner's dashboard alike: a refund's address is
 * screened first, outside any transaction (a refund to the payer is a payout like any other,
 * product §21); then resolveInvoiceFor and `alsoInTx` (the dashboard's audit record) in one
 * transaction. Answers the invoice after.
 */
export async function resolveInvoiceOf(
  ctx: ServiceContext,
  invoiceId: string,
  /** The merchant's own invoice only (the dashboard); undefined: any (the operator). */
  merchantId: string | undefined,
  body: Static<typeof ResolveBody>,
  alsoInTx?: (tx: Tx, resolved: LoadedInvoice) => Promise<unknown>,
): Promise<Outcome<LoadedInvoice, ResolveRefusal>> {
  const screened = body.address === undefined ? null : await screenDestination(ctx, body.address);
  if (screened !== null) return { ok: false, refusal: screened };
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const policy = payoutRailPolicy(ctx);
      const resolved = await resolveInvoiceFor(tx, invoiceId, merchantId, body, ctx.config.publicBaseUrl, policy);
      await alsoInTx?.(tx, resolved);
      return resolved;
    }),
  );
}

/**
 * Resolves an invoice in the caller's transaction: the body's consistency, the invoice (the
 * merchant's own when `merchantId` is given, another merchant's answering as an unknown one), then
 * resolveInvoice. Answers the invoice after.
 */
async function resolveInvoiceFor(
  tx: Tx,
  invoiceId: string,
  merchantId: string | undefined,
  body: Static<typeof ResolveBody>,
  publicBaseUrl: string,
  /** What this service pays out by: a refund's payout rail is chosen from it. */
  railPolicy?: PayoutRailPolicy,
): Promise<LoadedInvoice> {
  const { action, address } = body;
  if (action === "refund" && address === undefined) {
    refuse("invalid_resolution", "A refund needs the payer's address.", "/address", "is required with action refund");
  }
  if (action === "accept" && address !== undefined) {
    refuse(
      "invalid_resolution",
      "An accepted payment goes to the merchant: no address.",
      "/address",
      "only with action refund",
    );
  }
  const invoice = await lockInvoice(tx, invoiceId, merchantId);
  if (!invoice) return refuse("invoice_not_found", "No invoice with this id.", "/", null);
  const resolved = await resolveInvoice(
    tx,
    invoice,
    action === "accept" ? { action } : { action, address: address ?? "" },
    nowIso(),
    publicBaseUrl,
    railPolicy,
  );
  if (!resolved.ok) {
    const detail = `${resolved.detail ?? "The invoice cannot be resolved"}.`;
    if (resolved.error === "invalid_address") refuse(resolved.error, detail, "/address", resolved.detail ?? "");
    refuse(resolved.error, detail, "/", null);
  }
  const after = await findInvoiceById(tx, invoice.id);
  if (!after) throw invariantViolation("a resolved invoice exists");
  return after;
}
