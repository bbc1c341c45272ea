// Operator API: a merchant's payout policies (product §31); the operator's changes apply at once, without the dashboard's cooling-off.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { PayoutPolicyBody, payoutPolicies, setPayoutPolicy } from "../../app/payoutApprovals.ts";
import { findMerchant } from "../../store/merchants.ts";
import { PayoutPolicySchema } from "../payoutPolicyShapes.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

/** Every route here: the operator's bearer token. */
const security = [{ adminToken: [] }];

export function registerAdminPayoutPolicies(app: App, ctx: ServiceContext): void {
  app.put(
    "/merchants/:id/payout-policies/:currency",
    {
      schema: {
        operationId: "AdminSetPayoutPolicy",
        summary:
          "Set a merchant's payout policy in one currency: limits per payout and per rolling 24 hours, and the approvals (0 to 3) a payout over them waits for",
        tags: ["operator"],
        security,
        params: Type.Object(
          {
            id: Type.String({ minLength: 1, maxLength: 100 }),
            currency: Type.String({ minLength: 1, maxLength: 40 }),
          },
          { additionalProperties: false },
        ),
        body: PayoutPolicyBody,
        response: { 200: PayoutPolicySchema, ...problems(400, 401, 404, 415) },
      },
    },
    async (request) => {
      const target = { merchantId: request.params.id, currency: request.params.currency };
      return valueOrProblem(await setPayoutPolicy(ctx, target, request.body, 0));
    },
  );
  app.get(
    "/merchants/:id/payout-policies",
    {
      schema: {
        operationId: "AdminListPayoutPolicies",
        summary: "A merchant's payout policies, one per currency",
        tags: ["operator"],
        security,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        response: { 200: Type.Array(PayoutPolicySchema), ...problems(401, 404) },
      },
    },
    async (request) => {
      if (!(await findMerchant(ctx.store, request.params.id))) {
        throw new Problem("merchant_not_found", "No merchant with this id.");
      }
      return payoutPolicies(ctx, request.params.id);
    },
  );
}
