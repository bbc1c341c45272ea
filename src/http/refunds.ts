// What RefundCrypto and RefundFiat share: body fields, the signed transaction that accepts a refund, and refusals as problems.
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { type CryptoDestinationFields, REFUND_REFUSAL_POINTER, type RefundType } from "../domain/refund.ts";
import { acceptRefund } from "../store/refundAcceptance.ts";
import type { ServiceContext } from "./context.ts";
import { publicRefundRequest } from "./payoutViews.ts";
import { Problem } from "./problem.ts";
import { runSignedOperation } from "./signed.ts";

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
 * Accepts a refund as a signed operation: in one transaction with the request id's claim, so a
 * refusal (a Problem, 400) records nothing and an acceptance is answered and replayed as recorded.
 */
export function runRefund(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  facts: RefundBodyFacts,
): Promise<FastifyReply> {
  return runSignedOperation(ctx, request, reply, async (tx, signed, now) => {
    const accepted = await acceptRefund(
      tx,
      {
        requestKey: signed.requestKey,
        merchantId: signed.merchantId,
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
    return { request: publicRefundRequest(accepted.value) };
  });
}
