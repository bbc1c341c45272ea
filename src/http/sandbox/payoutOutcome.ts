// Sandbox: the simulated payout processor reports the outcome of a payout (product §10).
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { settleSandboxPayout } from "../../app/recordPayoutOutcome.ts";
import { checkRequestId } from "../../domain/signing.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { OperationResponse, operationResponse } from "../payoutViews.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

const payoutNotFound = () => new Problem("payout_not_found", "No payout of yours has this request id.");

export function registerSandboxPayoutOutcome(app: App, ctx: ServiceContext, prefix: string): void {
  app.post(
    `${prefix}/payouts/:requestId/outcome`,
    {
      onRequest: [merchantAuth(ctx)],
      schema: {
        operationId: "SandboxPayoutOutcome",
        tags: ["sandbox"],
        summary: "Settle a payout of a withdrawal or refund as the payout processor would",
        security: [{ apiKey: [] }],
        params: Type.Object({ requestId: Type.String({ minLength: 1, maxLength: 100 }) }),
        body: Type.Object(
          {
            status: Type.Union([Type.Literal("completed"), Type.Literal("failed")]),
            txId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: OperationResponse, ...problems(400, 401, 404, 409, 415, 429) },
      },
    },
    async (request) => {
      const key = checkRequestId(request.params.requestId);
      if (!key.ok) throw payoutNotFound();
      const merchantId = ownerOf(request).merchantId;
      return valueOrProblem(await settleSandboxPayout(ctx, merchantId, key.value, request.body, operationResponse));
    },
  );
}
