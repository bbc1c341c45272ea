// RefundCrypto and RefundFiat as signed operations: the acceptance is the createRefund use case.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { performRefund, type RefundBodyFacts } from "../app/createRefund.ts";
import { runSignedOperation } from "./signed.ts";

/** Accepts a refund as a signed operation. */
export function runRefund(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  facts: RefundBodyFacts,
): Promise<FastifyReply> {
  return runSignedOperation(ctx, request, reply, (tx, signed, now) => performRefund(ctx, tx, signed, facts, now));
}
