// Operator API: withdrawal methods (integer ids) that merchants withdraw to: add, list, disable.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { addWithdrawalMethod, answerMethod, answerMethods } from "../../app/withdrawalMethods.ts";
import { disableWithdrawalMethod, findMerchant, listWithdrawalMethods } from "../../store/merchants.ts";
import { nowIso } from "../../store/store.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { MethodIdParam, WithdrawalMethodSchema } from "../shapes.ts";
import { MerchantIdParams } from "./schemas.ts";

/** Every route here: the operator's bearer token. */
const security = [{ adminToken: [] }];

export function registerAdminWithdrawalMethods(app: App, ctx: ServiceContext): void {
  registerAdminCreateWithdrawalMethod(app, ctx);
  registerAdminListWithdrawalMethods(app, ctx);
  registerAdminDisableWithdrawalMethod(app, ctx);
}

function registerAdminCreateWithdrawalMethod(app: App, ctx: ServiceContext): void {
  app.post(
    "/merchants/:id/withdrawal-methods",
    {
      schema: {
        operationId: "AdminCreateWithdrawalMethod",
        summary: "Register a withdrawal method for a merchant",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        body: Type.Object(
          {
            currency: Type.String({ minLength: 1, maxLength: 40 }),
            address: Type.String({ minLength: 1, maxLength: 200 }),
            label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: WithdrawalMethodSchema, ...problems(400, 401, 404, 409, 415) },
      },
    },
    async (request) => {
      const { currency, address, label } = request.body;
      const fields = { merchantId: request.params.id, currency, address, label: label ?? null };
      return valueOrProblem(await addWithdrawalMethod(ctx, fields));
    },
  );
}

function registerAdminListWithdrawalMethods(app: App, ctx: ServiceContext): void {
  app.get(
    "/merchants/:id/withdrawal-methods",
    {
      schema: {
        operationId: "AdminListWithdrawalMethods",
        summary: "The merchant's withdrawal methods",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: Type.Array(WithdrawalMethodSchema), ...problems(401, 404) },
      },
    },
    async (request) => {
      if (!(await findMerchant(ctx.store, request.params.id)))
        throw new Problem("merchant_not_found", "No merchant with this id.");
      return answerMethods(ctx.store, await listWithdrawalMethods(ctx.store, request.params.id));
    },
  );
}

function registerAdminDisableWithdrawalMethod(app: App, ctx: ServiceContext): void {
  app.post(
    "/merchants/:id/withdrawal-methods/:methodId/disable",
    {
      schema: {
        operationId: "AdminDisableWithdrawalMethod",
        tags: ["operator"],
        security,
        summary: "Disable a withdrawal method: it takes no new withdrawal (from the API or the dashboard)",
        params: Type.Object(
          { id: MerchantIdParams.properties.id, methodId: MethodIdParam },
          { additionalProperties: false },
        ),
        response: { 200: WithdrawalMethodSchema, ...problems(401, 404) },
      },
    },
    async (request) =>
      ctx.store.transaction(async (tx) => {
        if (!(await findMerchant(tx, request.params.id)))
          throw new Problem("merchant_not_found", "No merchant with this id.");
        const method = await disableWithdrawalMethod(tx, request.params.id, Number(request.params.methodId), nowIso());
        if (!method)
          throw new Problem("withdrawal_method_unknown", "The merchant has no withdrawal method with this id.");
        return answerMethod(tx, method);
      }),
  );
}
