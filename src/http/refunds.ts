// What RefundCrypto and RefundFiat share: body fields, the signed transaction that accepts a refund, and refusals as problems.
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { ServiceContext } from "../app/context.ts";
import type { IdempotentRequest } from "../app/performOnce.ts";
import { refuseScreenedRefund } from "../app/screenDestination.ts";
import { checkEvmAddress } from "../domain/evmAddress.ts";
import { type CryptoDestinationFields, REFUND_REFUSAL_POINTER, type RefundType } from "../domain/refund.ts";
import { acceptRefund } from "../store/refundAcceptance.ts";
import type { Tx } from "../store/store.ts";
import { publicRefundRequest } from "./payoutViews.ts";
import { Problem } from "./problem.ts";
import { runSignedOperation, signedRequestOf } from "./signed.ts";

/** Invoice ids are UUIDs; the bound only keeps arbitrary text out of queries (as GetInvoice's path parameter). */
export const InvoiceIdField = Type.String({ minLength: 1, maxLength: 500, description: "An invoice of your account" });

export const ReasonField = Type.String({
  maxLength: 1000,
  description: "Why the invoice is refunded; kept with the refund, not shown in its public object",
});

export interface RefundBodyFacts {
  type: RefundType;
  invoiceId: string;
  reason: string | undefined;
  /** Crypto: the body's destination fields; null for fiat. */
  destination: CryptoDestinationFields | null;
}

/**
 * Accepts a refund inside its request id's transaction (performOnce), for RefundCrypto, RefundFiat
 * and the dashboard's refund action alike: a refusal (a Problem, 400) records nothing and an
 * acceptance is answered and replayed as recorded.
 */
export async function performRefund(
  ctx: ServiceContext,
  tx: Tx,
  idempotent: IdempotentRequest,
  facts: RefundBodyFacts,
  now: string,
): Promise<{ request: ReturnType<typeof publicRefundRequest> }> {
  const accepted = await acceptRefund(
    tx,
    {
      requestKey: idempotent.requestKey,
      merchantId: idempotent.merchantId,
      type: facts.type,
      invoiceId: facts.invoiceId,
      destination: facts.destination,
      reason: facts.reason ?? null,
    },
    now,
    ctx.config.publicBaseUrl,
  );
  if (!accepted.ok) {
    const detail = accepted.detail ?? "The refund was refused.";
    throw new Problem(accepted.error, detail, [{ pointer: REFUND_REFUSAL_POINTER[accepted.error], detail }]);
  }
  // Live money goes to the chain: the refund's address must be one (throwing rolls the acceptance back).
  if (ctx.config.serviceMode === "live" && accepted.value.toAddress !== null && facts.type === "crypto") {
    const checked = checkEvmAddress(accepted.value.toAddress);
    if (!checked.ok) {
      throw new Problem("invalid_address", `The refund address is not valid: ${checked.detail}.`, [
        { pointer: "/address", detail: checked.detail ?? "is not a valid address" },
      ]);
    }
  }
  return { request: publicRefundRequest(accepted.value) };
}

/** Accepts a refund as a signed operation. */
export function runRefund(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  facts: RefundBodyFacts,
): Promise<FastifyReply> {
  return refuseScreenedRefund(ctx, signedRequestOf(request).merchantId, facts.invoiceId, facts.destination).then(() =>
    runSignedOperation(ctx, request, reply, (tx, signed, now) => performRefund(ctx, tx, signed, facts, now)),
  );
}
