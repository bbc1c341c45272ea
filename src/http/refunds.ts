// RefundCrypto and RefundFiat as signed operations: the acceptance is the createRefund use case.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { type RefundBodyFacts, refundOnce } from "../app/createRefund.ts";
import { valueOrProblem } from "./problem.ts";
import { answerVerdict, signedRequestOf } from "./signed.ts";

/** Accepts a refund as a signed operation. */
export async function runRefund(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  facts: RefundBodyFacts,
): Promise<FastifyReply> {
  return answerVerdict(reply, valueOrProblem(await refundOnce(ctx, signedRequestOf(request), facts)));
}
