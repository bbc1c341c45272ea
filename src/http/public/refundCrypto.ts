// RefundCrypto: a signed operation that refunds a completed invoice's paid amount, in its currency, to an address or to its sender.
import type { ServiceContext } from "../../app/context.ts";
import { RefundCryptoBody } from "../../app/createRefund.ts";
import { RefundResponse } from "../payoutViews.ts";
import { runRefund } from "../refunds.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { signedOperation } from "../signed.ts";

export const REFUND_CRYPTO_PATH = "/public/v1/refunds/refundCrypto";

export function registerRefundCrypto(app: App, ctx: ServiceContext): void {
  app.post(
    REFUND_CRYPTO_PATH,
    {
      ...signedOperation(ctx, REFUND_CRYPTO_PATH),
      schema: {
        operationId: "RefundCrypto",
        tags: ["refunds"],
        summary: "Refund a completed invoice in its (non-fiat) payment currency (signed)",
        description:
          "Needs x-api-key, x-service-timestamp, x-service-request-id and x-service-request-signature; see docs/signed-operations.md and docs/refunds.md.",
        security: [{ apiKey: [] }],
        body: RefundCryptoBody,
        response: { 200: RefundResponse, ...problems(400, 401, 403, 409, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      const { invoiceId, reason, address, withdrawToSameAddress } = request.body;
      return runRefund(ctx, request, reply, {
        type: "crypto",
        invoiceId,
        reason,
        destination: { address, withdrawToSameAddress },
      });
    },
  );
}
