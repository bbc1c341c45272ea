// RefundCrypto: a signed operation that refunds a completed invoice's paid amount, in its currency, to an address or to its sender.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import type { App } from "../app.ts";
import { RefundResponse } from "../payoutViews.ts";
import { InvoiceIdField, ReasonField, runRefund } from "../refunds.ts";
import { problems } from "../schemas.ts";
import { signedOperation } from "../signed.ts";

export const REFUND_CRYPTO_PATH = "/public/v1/refunds/refundCrypto";

export const RefundCryptoBody = Type.Object(
  {
    invoiceId: InvoiceIdField,
    reason: Type.Optional(ReasonField),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Explicit destination address" })),
    withdrawToSameAddress: Type.Optional(
      Type.Boolean({ description: "true: refund to the sender address of the invoice's only incoming transaction" }),
    ),
  },
  {
    additionalProperties: false,
    description: "Exactly one destination: address, or withdrawToSameAddress: true.",
  },
);

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
