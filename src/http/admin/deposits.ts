// Operator API (product §30, §21): customers' deposits waiting for a decision (aml_check: their sender listed or not screened), and the screening decision on one: clear (credited) or block (the screening account keeps it), audited.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { decideDepositAml, depositsForOperator } from "../../app/depositDecisions.ts";
import { Deposit, DepositStatusSchema } from "../depositAddressShapes.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

const DepositAmlBody = Type.Object(
  {
    decision: Type.Union([Type.Literal("clear"), Type.Literal("block")]),
    reason: Type.Optional(
      Type.String({ minLength: 1, maxLength: 500, description: "Why, kept with the decision for the audit" }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "`clear`: the deposit is credited with the fees of §4 (completed, deposit.completed and its callback); `block`: it ends blocked, its funds in the operator's screening account, never the merchant's.",
  },
);

export function registerAdminDeposits(app: App, ctx: ServiceContext): void {
  const security = [{ adminToken: [] }];
  app.get(
    "/deposits",
    {
      schema: {
        operationId: "AdminListDeposits",
        tags: ["operator"],
        summary:
          "Every merchant's customers' deposits in one status (default aml_check: waiting for the operator), oldest first",
        security,
        querystring: Type.Object(
          {
            status: Type.Optional(DepositStatusSchema),
            limit: Type.Optional(Type.String({ pattern: "^(?:[1-9][0-9]?|100)$" })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ items: Type.Array(Deposit) }, { additionalProperties: false }),
          ...problems(400, 401),
        },
      },
    },
    async (request) => ({
      items: await depositsForOperator(ctx, request.query.status ?? "aml_check", Number(request.query.limit ?? "50")),
    }),
  );
  app.post(
    "/deposits/:id/aml",
    {
      schema: {
        operationId: "AdminDecideDepositAml",
        tags: ["operator"],
        summary: "Decide on a customer's deposit in aml_check: clear (credited) or block",
        security,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }),
        body: DepositAmlBody,
        response: { 200: Deposit, ...problems(400, 401, 404, 409, 415) },
      },
    },
    async (request) =>
      valueOrProblem(
        await decideDepositAml(ctx, {
          depositId: request.params.id,
          decision: request.body.decision,
          reason: request.body.reason ?? null,
          actor: "operator",
        }),
      ),
  );
}
