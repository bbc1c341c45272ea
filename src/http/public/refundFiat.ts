// RefundFiat: a signed operation that refunds a completed invoice's paid amount in its fiat settlement currency.
import type { ServiceContext } from "../../app/context.ts";
import { RefundFiatBody } from "../../app/createRefund.ts";
import { RefundResponse } from "../payoutViews.ts";
import { runRefund } from "../refunds.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { signedOperation } from "../signed.ts";

export const REFUND_FIAT_PATH = "/public/v1/refunds/refundFiat";

export function registerRefundFiat(app: App, ctx: ServiceContext): void {
  app.post(
    REFUND_FIAT_PATH,
    {
      ...signedOperation(ctx, REFUND_FIAT_PATH),
      schema: {
        operationId: "RefundFiat",
        tags: ["refunds"],
        summary: "Refund a completed invoice that settles in fiat, in its settlement currency (signed)",
        description:
          "Needs x-api-key, x-service-timestamp, x-service-request-id and x-service-request-signature; see docs/signed-operations.md and docs/refunds.md.",
        security: [{ apiKey: [] }],
        body: RefundFiatBody,
        response: { 200: RefundResponse, ...problems(400, 401, 403, 409, 413, 415, 429) },
      },
    },
    async (request, reply) =>
      runRefund(ctx, request, reply, {
        type: "fiat",
        invoiceId: request.body.invoiceId,
        reason: request.body.reason,
        destination: null,
      }),
  );
}
