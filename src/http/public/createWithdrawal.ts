// CreateWithdrawal: a signed operation that debits the balance and queues the payout to a registered withdrawal method.
import type { ServiceContext } from "../../app/context.ts";
import { CreateWithdrawalBody, performWithdrawal } from "../../app/createWithdrawal.ts";
import { WithdrawalResponse } from "../payoutViews.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { answerVerdict, signedOperation, signedRequestOf } from "../signed.ts";

export const CREATE_WITHDRAWAL_PATH = "/public/v1/withdrawals/create";

export function registerCreateWithdrawal(app: App, ctx: ServiceContext): void {
  app.post(
    CREATE_WITHDRAWAL_PATH,
    {
      ...signedOperation(ctx, CREATE_WITHDRAWAL_PATH),
      schema: {
        operationId: "CreateWithdrawal",
        tags: ["withdrawals"],
        summary: "Withdraw balance to a registered withdrawal method (signed)",
        description:
          "Needs x-api-key, x-service-timestamp, x-service-request-id and x-service-request-signature; see docs/signed-operations.md.",
        security: [{ apiKey: [] }],
        body: CreateWithdrawalBody,
        response: { 200: WithdrawalResponse, ...problems(400, 401, 403, 409, 413, 415, 429) },
      },
    },
    async (request, reply) =>
      answerVerdict(reply, valueOrProblem(await performWithdrawal(ctx, signedRequestOf(request), request.body))),
  );
}
