// RefundCrypto and RefundFiat as signed operations: the acceptance is the createRefund use case.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { performRefund, type RefundBodyFacts } from "../app/createRefund.ts";
import { refuseScreenedRefund } from "../app/screenDestination.ts";
import { runSignedOperation, signedRequestOf } from "./signed.ts";

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
