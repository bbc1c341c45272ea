// Sandbox: the simulated payout processor reports the outcome of a payout (product §10).
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { SANDBOX_PROCESSOR_STATUS, sandboxTxId } from "../../app/payoutProcessors.ts";
import { checkRequestId } from "../../domain/signing.ts";
import { findPayout, settlePayout } from "../../store/payouts.ts";
import { nowIso } from "../../store/store.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { OperationResponse, operationResponse } from "../payoutViews.ts";
import { Problem } from "../problem.ts";
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
      const { status, txId } = request.body;
      const body = await ctx.store.transaction(async (tx) => {
        const payout = await findPayout(tx, key.value);
        // Another merchant's payout answers exactly as an unknown one.
        if (!payout || payout.merchantId !== merchantId) throw payoutNotFound();
        const settled = await settlePayout(
          tx,
          key.value,
          {
            outcome: status,
            processorStatus: SANDBOX_PROCESSOR_STATUS[status],
            processorTxId: txId ?? (status === "completed" ? (payout.processorTxId ?? sandboxTxId()) : null),
          },
          nowIso(),
          ctx.config.publicBaseUrl,
        );
        if (!settled.ok) {
          throw new Problem("payout_already_settled", "This payout was already settled; its outcome cannot change.");
        }
        return operationResponse(tx, settled.value);
      });
      return body;
    },
  );
}
