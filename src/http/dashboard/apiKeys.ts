// Dashboard API keys: list, issue (full or scoped; the secret shown once) and revoke the merchant's keys.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { issueApiKey, listApiKeys, revokeApiKeyById } from "../../store/merchants.ts";
import { nowIso } from "../../store/store.ts";
import { ApiKeyItem, ApiKeyLimitFields, apiKeyLimits } from "../apiKeyShapes.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { Ok } from "./common.ts";
import { security, tags } from "./moneyCommon.ts";
import type { DashboardScope } from "./session.ts";
import { requireRole, requireStepUp } from "./session.ts";

export function registerDashboardApiKeys(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.get(
    "/api-keys",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListApiKeys",
        summary: "The merchant's API keys",
        tags,
        security,
        response: { 200: Type.Array(ApiKeyItem), ...problems(401) },
      },
    },
    async (request) => listApiKeys(ctx.store, requireRole(request, "read").user.merchantId),
  );
  api.post(
    "/api-keys",
    {
      onRequest: session,
      // The body is optional: no body means a full key.
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
      schema: {
        operationId: "DashboardCreateApiKey",
        tags,
        security,
        summary: "Create an API key, full or scoped; its secret is in this answer only (needs a step-up)",
        body: Type.Object(ApiKeyLimitFields, { additionalProperties: false }),
        response: {
          200: Type.Object({ apiKey: Type.String(), secretKey: Type.String() }, { additionalProperties: false }),
          ...problems(400, 401, 403),
        },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageApiKeys");
      requireStepUp(request);
      const limits = apiKeyLimits(request.body);
      return ctx.store.transaction(async (tx) => {
        const issued = await issueApiKey(tx, ctx.box, user.merchantId, false, nowIso(), limits);
        await record(request, tx, "api_key.create", issued.apiKey.slice(0, 10));
        return { apiKey: issued.apiKey, secretKey: issued.secretKey as string };
      });
    },
  );
  api.delete(
    "/api-keys/:id",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardRevokeApiKey",
        summary: "Revoke an API key",
        tags,
        security,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        response: { 200: Ok, ...problems(401, 403, 404) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageApiKeys");
      await ctx.store.transaction(async (tx) => {
        if (!(await revokeApiKeyById(tx, user.merchantId, request.params.id, nowIso())))
          throw new Problem("api_key_not_found", "No live API key with this id.");
        await record(request, tx, "api_key.revoke", request.params.id);
      });
      return { ok: true as const };
    },
  );
}
