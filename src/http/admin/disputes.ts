// GET /admin/v1/disputes: the operator's view of card disputes (product §20), newest first, open ones or all.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { listDisputes } from "../../store/cardPayments.ts";
import { OperatorDisputeSchema, operatorDisputeViews } from "../disputeViews.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

const DisputesQuery = Type.Object(
  {
    merchantId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    open: Type.Optional(Type.Boolean({ description: "Only disputes not yet closed" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 100 })),
  },
  { additionalProperties: false },
);

export function registerAdminDisputes(app: App, ctx: ServiceContext): void {
  app.get(
    "/disputes",
    {
      schema: {
        operationId: "AdminListDisputes",
        tags: ["operator"],
        summary: "Card disputes, newest first: what each holds, what is owed, which are above their payment",
        security: [{ adminToken: [] }],
        querystring: DisputesQuery,
        response: { 200: Type.Array(OperatorDisputeSchema), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const rows = await listDisputes(ctx.store, {
        ...(request.query.merchantId === undefined ? {} : { merchantId: request.query.merchantId }),
        openOnly: request.query.open === true,
        limit: request.query.limit ?? 100,
      });
      return operatorDisputeViews(ctx.store, rows);
    },
  );
}
