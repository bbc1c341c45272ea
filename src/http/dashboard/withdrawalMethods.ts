// Dashboard withdrawal methods (product §14): list; add, label and disable (owners; add and disable need a step-up), every change audited.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { addWithdrawalMethod, answerMethod, answerMethods } from "../../app/withdrawalMethods.ts";
import {
  disableWithdrawalMethod,
  labelWithdrawalMethod,
  listWithdrawalMethods,
  type WithdrawalMethod,
} from "../../store/merchants.ts";
import { nowIso } from "../../store/store.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { MethodIdParam, WithdrawalMethodSchema } from "../shapes.ts";
import { security, tags } from "./moneyCommon.ts";
import { type DashboardScope, requireRole, requireStepUp } from "./session.ts";

const MethodParams = Type.Object({ methodId: MethodIdParam }, { additionalProperties: false });

function target(method: WithdrawalMethod): string {
  return `#${method.id} ${method.currency} ${method.address}${method.label ? ` (${method.label})` : ""}`;
}

function unknownMethod(): Problem {
  return new Problem("withdrawal_method_unknown", "Your account has no withdrawal method with this id.");
}

export function registerDashboardWithdrawalMethods(api: App, ctx: ServiceContext, scope: DashboardScope) {
  registerDashboardListWithdrawalMethods(api, ctx, scope);
  registerDashboardAddWithdrawalMethod(api, ctx, scope);
  registerDashboardLabelWithdrawalMethod(api, ctx, scope);
  registerDashboardDisableWithdrawalMethod(api, ctx, scope);
}

function registerDashboardListWithdrawalMethods(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/withdrawal-methods",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListWithdrawalMethods",
        summary: "The merchant's withdrawal methods",
        tags,
        security,
        response: { 200: Type.Array(WithdrawalMethodSchema), ...problems(401) },
      },
    },
    async (request) =>
      answerMethods(ctx.store, await listWithdrawalMethods(ctx.store, requireRole(request, "read").user.merchantId)),
  );
}

function registerDashboardAddWithdrawalMethod(
  api: App,
  ctx: ServiceContext,
  { session, record }: DashboardScope,
): void {
  api.post(
    "/withdrawal-methods",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardAddWithdrawalMethod",
        tags,
        security,
        summary:
          "Add a withdrawal method (owners; needs a step-up); it takes withdrawals after the operator's cooling-off",
        body: Type.Object(
          {
            currency: Type.String({ minLength: 1, maxLength: 20 }),
            address: Type.String({ minLength: 1, maxLength: 200 }),
            label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: WithdrawalMethodSchema, ...problems(400, 401, 403, 409, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "moveMoney");
      requireStepUp(request);
      const { currency, address, label } = request.body;
      const fields = {
        merchantId: user.merchantId,
        currency,
        address,
        label: label ?? null,
        addedBy: "dashboard" as const,
      };
      const added = await addWithdrawalMethod(ctx, fields, (tx, method) => {
        const from = method.usableFrom ? `, takes withdrawals from ${method.usableFrom}` : "";
        return record(request, tx, "withdrawal_method.add", `${target(method)}${from}`);
      });
      return valueOrProblem(added);
    },
  );
}

function registerDashboardLabelWithdrawalMethod(
  api: App,
  ctx: ServiceContext,
  { session, record }: DashboardScope,
): void {
  api.patch(
    "/withdrawal-methods/:methodId",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardLabelWithdrawalMethod",
        tags,
        security,
        summary: "Set or clear a withdrawal method's label (owners)",
        params: MethodParams,
        body: Type.Object(
          { label: Nullable(Type.String({ minLength: 1, maxLength: 200 })) },
          { additionalProperties: false },
        ),
        response: { 200: WithdrawalMethodSchema, ...problems(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "moveMoney");
      return ctx.store.transaction(async (tx) => {
        const method = await labelWithdrawalMethod(
          tx,
          user.merchantId,
          Number(request.params.methodId),
          request.body.label,
        );
        if (!method) throw unknownMethod();
        await record(request, tx, "withdrawal_method.label", target(method));
        return answerMethod(tx, method);
      });
    },
  );
}

function registerDashboardDisableWithdrawalMethod(
  api: App,
  ctx: ServiceContext,
  { session, record }: DashboardScope,
): void {
  api.post(
    "/withdrawal-methods/:methodId/disable",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardDisableWithdrawalMethod",
        tags,
        security,
        summary: "Disable a withdrawal method: it takes no new withdrawal (owners; needs a step-up)",
        params: MethodParams,
        response: { 200: WithdrawalMethodSchema, ...problems(401, 403, 404) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "moveMoney");
      requireStepUp(request);
      return ctx.store.transaction(async (tx) => {
        const method = await disableWithdrawalMethod(tx, user.merchantId, Number(request.params.methodId), nowIso());
        if (!method) throw unknownMethod();
        await record(request, tx, "withdrawal_method.disable", target(method));
        return answerMethod(tx, method);
      });
    },
  );
}
