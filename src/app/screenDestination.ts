// Outgoing screening (product §21): a payout destination on a screening list is refused (400 destination_screened) before money is promised to it.
import { looksLikeAddress } from "../domain/screening.ts";
import { incomingPaymentsSummary } from "../store/invoices.ts";
import { findWithdrawalMethod } from "../store/merchants.ts";
import type { ServiceContext } from "./context.ts";
import { MAX_METHOD_ID } from "./createWithdrawal.ts";
import { Problem } from "./problem.ts";
import type { Refusal } from "./refusal.ts";
import { screenAddress } from "./screening.ts";

const LISTED_DETAIL = "The destination address is on a screening (sanctions) list: no payout can go to it.";
const UNAVAILABLE_DETAIL = "The destination address cannot be screened now; try again later.";

/**
 * The refusal of a destination screening lists (destination_screened), or cannot screen now
 * (screening_unavailable, 503): money never leaves to an unscreened address. Null when it is
 * clear, or when it is no address at all (the caller's own check refuses that as invalid_address).
 * Called outside any transaction: a provider may take its whole timeout.
 */
export async function screenDestination(
  ctx: Pick<ServiceContext, "screening">,
  address: string,
  pointer = "/address",
): Promise<Refusal<"destination_screened" | "screening_unavailable"> | null> {
  if (!looksLikeAddress(address)) return null;
  const verdict = await screenAddress(ctx.screening, address.trim());
  if (verdict === "listed") return { code: "destination_screened", detail: LISTED_DETAIL, pointer };
  if (verdict === "unavailable") return { code: "screening_unavailable", detail: UNAVAILABLE_DETAIL, pointer: "/" };
  return null;
}

/** screenDestination as a thrown Problem, for handlers (a withdrawal method added, a refund created). */
export async function refuseScreenedDestination(ctx: ServiceContext, address: string, pointer = "/address") {
  const refusal = await screenDestination(ctx, address, pointer);
  if (refusal === null) return;
  throw new Problem(
    refusal.code,
    refusal.detail,
    refusal.code === "destination_screened" ? [{ pointer, detail: "is on a screening list" }] : undefined,
  );
}

/** A withdrawal to the merchant's method: its address screened (another merchant's method is left to the withdrawal's own rules). */
export async function refuseScreenedWithdrawal(ctx: ServiceContext, merchantId: string, withdrawalMethodId: unknown) {
  // An id no method can have (PostgreSQL `integer`) must not reach a query: the withdrawal's own rules refuse it.
  if (
    typeof withdrawalMethodId !== "number" ||
    !Number.isSafeInteger(withdrawalMethodId) ||
    withdrawalMethodId < 1 ||
    withdrawalMethodId > MAX_METHOD_ID
  ) {
    return;
  }
  const method = await findWithdrawalMethod(ctx.store, withdrawalMethodId);
  if (method === null || method.merchantId !== merchantId) return;
  await refuseScreenedDestination(ctx, method.address, "/withdrawalMethodId");
}

/**
 * A crypto refund's destination: the address given, or with `withdrawToSameAddress` the invoice's
 * sole sender (a sender cleared by the operator is screened again: lists change).
 */
export async function refuseScreenedRefund(
  ctx: ServiceContext,
  merchantId: string,
  invoiceId: string,
  destination: { address?: string | undefined; withdrawToSameAddress?: boolean | undefined } | null,
) {
  if (destination === null) return;
  if (typeof destination.address === "string") {
    await refuseScreenedDestination(ctx, destination.address);
    return;
  }
  if (destination.withdrawToSameAddress !== true) return;
  const invoice = await ctx.store.db
    .selectFrom("invoices")
    .select("id")
    .where("id", "=", invoiceId)
    .where("merchant_id", "=", merchantId)
    .executeTakeFirst();
  if (!invoice) return;
  const sender = (await incomingPaymentsSummary(ctx.store, invoice.id)).soleSenderAddress;
  if (sender !== null) await refuseScreenedDestination(ctx, sender, "/withdrawToSameAddress");
}
