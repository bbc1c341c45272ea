// POST /public/v1/refunds/create (product §25, extension): parses the signed body, calls the createPartialRefund use case and answers it.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { CREATE_REFUND_PATH, createPartialRefund } from "../../app/createPartialRefund.ts";
import { InvoiceIdField, ReasonField } from "../../app/createRefund.ts";
import { PublicRefundRequest } from "../payoutViews.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { answerVerdict, signedOperation, signedRequestOf } from "../signed.ts";

export const CreateRefundBody = Type.Object(
  {
    invoiceId: InvoiceIdField,
    type: Type.Union([Type.Literal("crypto"), Type.Literal("fiat")]),
    amount: Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        "Plain decimal monetary string, in the invoice currency (crypto) or the settlement currency (fiat); at most what is still refundable",
    }),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Explicit destination address" })),
    withdrawToSameAddress: Type.Optional(
      Type.Boolean({ description: "true: to the sender of the invoice's only incoming transaction" }),
    ),
    claim: Type.Optional(
      Type.Boolean({
        description: "true: debit now and answer a claimUrl where the payer enters an address (30 days)",
      }),
    ),
    networkFeePaidBy: Type.Optional(
      Type.Union([Type.Literal("merchant"), Type.Literal("payer")], {
        description: "Who bears the payout's network fee (default payer: it is taken from the amount)",
      }),
    ),
    reason: Type.Optional(ReasonField),
  },
  {
    additionalProperties: false,
    description:
      "A crypto refund has exactly one destination: address, withdrawToSameAddress: true or claim: true; a fiat refund none.",
  },
);

export const CreateRefundResponse = Type.Object(
  {
    request: PublicRefundRequest,
    claimUrl: Nullable(Type.String({ description: "The payer's page /refund/{token} of a claim refund; else null" })),
    claimExpiresAt: Nullable(Type.String({ format: "date-time", description: "Until when the claim can be made" })),
  },
  { additionalProperties: false, description: "The answer of POST /public/v1/refunds/create" },
);

export function registerCreateRefund(app: App, ctx: ServiceContext): void {
  app.post(
    CREATE_REFUND_PATH,
    {
      ...signedOperation(ctx, CREATE_REFUND_PATH),
      schema: {
        operationId: "CreateRefund",
        tags: ["extensions"],
        summary: "Refund part or all of an invoice, several times, to an address, the sender or a claim link (signed)",
        description:
          "Signed and idempotent like RefundCrypto (x-api-key, x-service-timestamp, x-service-request-id, x-service-request-signature); see docs/refunds-and-payment-links.md.",
        security: [{ apiKey: [] }],
        body: CreateRefundBody,
        response: { 200: CreateRefundResponse, ...problems(400, 401, 403, 409, 413, 415, 429) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const outcome = await createPartialRefund(ctx, signedRequestOf(request), {
        invoiceId: body.invoiceId,
        type: body.type,
        amount: body.amount,
        destination: { address: body.address, withdrawToSameAddress: body.withdrawToSameAddress, claim: body.claim },
        networkFeePaidBy: body.networkFeePaidBy ?? "payer",
        reason: body.reason ?? null,
      });
      return answerVerdict(reply, valueOrProblem(outcome));
    },
  );
}
