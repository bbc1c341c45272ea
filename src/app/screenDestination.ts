// Outgoing screening (product §21): a payout destination on a screening list is refused (400 destination_screened) before money is promised to it.
import { looksLikeAddress } from "../domain/screening.ts";
import { incomingPaymentsSummary } from "../store/invoices.ts";
import type { ServiceContext } from "./context.ts";
import type { Refusal } from "./refusal.ts";
import { screenAddress } from "./screening.ts";

const LISTED_DETAIL = "The destination address is on a screening (sanctions) list: no payout can go to it.";
const UNAVAILABLE_DETAIL = "The destination address cannot be screened now; try again later.";

/** The refusal of a screened destination, as every use case that pays out answers it. */
export type ScreeningRefusal = Refusal<"destination_screened" | "screening_unavailable">;

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
): Promise<ScreeningRefusal | null> {
  if (!looksLikeAddress(address)) return null;
  const verdict = await screenAddress(ctx.screening, address.trim());
  if (verdict === "listed") {
    return { code: "destination_screened", detail: LISTED_DETAIL, pointer, fieldDetail: "is on a screening list" };
  }
  if (verdict === "unavailable") {
    return { code: "screening_unavailable", detail: UNAVAILABLE_DETAIL, pointer: "/", fieldDetail: null };
  }
  return null;
}

/**
 * A crypto refund's destination: the address given, or with `withdrawToSameAddress` the invoice's
 * sole sender (a sender cleared by the operator is screened again: lists change). Null: nothing to
 * refuse (a fiat refund, a claim, or an invoice the refund's own rules refuse).
 */
export async function screenRefundDestination(
  ctx: Pick<ServiceContext, "screening" | "store">,
  merchantId: string,
  invoiceId: string,
  destination: { address?: string | undefined; withdrawToSameAddress?: boolean | undefined } | null,
): Promise<ScreeningRefusal | null> {
  if (destination === null) return null;
  if (typeof destination.address === "string") return screenDestination(ctx, destination.address);
  if (destination.withdrawToSameAddress !== true) return null;
  const invoice = await ctx.store.db
    .selectFrom("invoices")
    .select("id")
    .where("id", "=", invoiceId)
    .where("merchant_id", "=", merchantId)
    .executeTakeFirst();
  if (!invoice) return null;
  const sender = (await incomingPaymentsSummary(ctx.store, invoice.id)).soleSenderAddress;
  return sender === null ? null : screenDestination(ctx, sender, "/withdrawToSameAddress");
}
