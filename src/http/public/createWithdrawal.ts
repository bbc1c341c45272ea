// CreateWithdrawal: a signed operation that debits the balance and queues the payout to a registered withdrawal method.
import type { ServiceContext } from "../../app/context.ts";
import { acceptInOneStatement, CreateWithdrawalBody, createWithdrawal } from "../../app/createWithdrawal.ts";
import { payoutRailPolicy } from "../../app/payoutProcessors.ts";
import { refuseScreenedWithdrawal } from "../../app/screenDestination.ts";
import type { App } from "../app.ts";
import { WithdrawalResponse } from "../payoutViews.ts";
import { problems } from "../schemas.ts";
import { answerVerdict, runSignedOperation, signedOperation, signedRequestOf } from "../signed.ts";

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
    async (request, reply) => {
      await refuseScreenedWithdrawal(ctx, signedRequestOf(request).merchantId, request.body.withdrawalMethodId);
      // PostgreSQL: one statement when the cached facts allow it (acceptInOneStatement); else,
      // and on SQLite (whose group commit makes each statement a local call), the ordinary path.
      if (ctx.store.dialect === "postgres") {
        const answered = await acceptInOneStatement(ctx, request.body, signedRequestOf(request));
        if (answered) return answerVerdict(reply, answered);
      }
      return runSignedOperation(ctx, request, reply, (tx, signed, now) =>
        createWithdrawal(tx, signed, request.body, now, payoutRailPolicy(ctx)),
      );
    },
  );
}
