// Resolve an invoice (the operator API and the owner's dashboard): accept or refund what a failed or expired invoice received (product §12).
import { type Static, Type } from "typebox";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { invariantViolation } from "../domain/result.ts";
import { findInvoiceById, type LoadedInvoice, lockInvoice } from "../store/invoices.ts";
import { resolveInvoice } from "../store/resolutions.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { payoutRailPolicy } from "./payoutProcessors.ts";
import { Problem } from "./problem.ts";
import type { Outcome } from "./refusal.ts";
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
): Promise<Outcome<LoadedInvoice, ScreeningRefusal["code"]>> {
  const screened = body.address === undefined ? null : await screenDestination(ctx, body.address);
  if (screened !== null) return { ok: false, refusal: screened };
  const loaded = await ctx.store.transaction(async (tx) => {
    const resolved = await resolveInvoiceFor(
      tx,
      invoiceId,
      merchantId,
      body,
      ctx.config.publicBaseUrl,
      payoutRailPolicy(ctx),
    );
    await alsoInTx?.(tx, resolved);
    return resolved;
  });
  return { ok: true, value: loaded };
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
    railPolicy,
  );
  if (!resolved.ok) {
    throw new Problem(
      resolved.error,
      `${resolved.detail ?? "The invoice cannot be resolved"}.`,
      resolved.error === "invalid_address" ? [{ pointer: "/address", detail: resolved.detail ?? "" }] : undefined,
    );
  }
  const after = await findInvoiceById(tx, invoice.id);
  if (!after) throw invariantViolation("a resolved invoice exists");
  return after;
}
