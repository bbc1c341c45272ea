// Operator API: issuing (full or scoped), listing and revoking merchant API keys; a secret is returned once, at issue.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { findMerchant, issueApiKey, listApiKeys, revokeApiKey } from "../../store/merchants.ts";
import { nowIso } from "../../store/store.ts";
import { ApiKeyItem, ApiKeyLimitFields, apiKeyLimits } from "../apiKeyShapes.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { MerchantIdParams } from "./schemas.ts";

const security = [{ adminToken: [] }];

export function registerAdminApiKeys(app: App, ctx: ServiceContext): void {
  registerIssueApiKey(app, ctx);
  registerListApiKeys(app, ctx);
  registerRevokeApiKey(app, ctx);
}

function registerIssueApiKey(app: App, ctx: ServiceContext): void {
  app.post(
    "/merchants/:id/api-keys",
    {
      // The body is optional: no body means a regular (non-legacy), full key.
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
      schema: {
        operationId: "AdminIssueApiKey",
        summary: "Issue an API key, full or scoped (its secret key is answered only here)",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        body: Type.Object(
          { legacy: Type.Optional(Type.Boolean()), ...ApiKeyLimitFields },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            {
              apiKey: Type.String(),
              secretKey: Nullable(Type.String({ description: "Shown once; null for a legacy key" })),
            },
            { additionalProperties: false },
          ),
          ...problems(400, 401, 404, 415),
        },
      },
    },
    async (request) => {
      const legacy = request.body.legacy ?? false;
      const limits = apiKeyLimits(request.body);
      const issued = await ctx.store.transaction(async (tx) => {
        if (!(await findMerchant(tx, request.params.id)))
          throw new Problem("merchant_not_found", "No merchant with this id.");
        return issueApiKey(tx, ctx.box, request.params.id, legacy, nowIso(), limits);
      });
      return issued;
    },
  );
}

function registerListApiKeys(app: App, ctx: ServiceContext): void {
  app.get(
    "/merchants/:id/api-keys",
    {
      schema: {
        operationId: "AdminListApiKeys",
        summary: "A merchant's API keys, newest first: scopes, address ranges, last use (never a key or its secret)",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: Type.Array(ApiKeyItem), ...problems(401, 404) },
      },
    },
    async (request) => {
      if (!(await findMerchant(ctx.store, request.params.id)))
        throw new Problem("merchant_not_found", "No merchant with this id.");
      return listApiKeys(ctx.store, request.params.id);
    },
  );
}

function registerRevokeApiKey(app: App, ctx: ServiceContext): void {
  app.post(
    "/api-keys/revoke",
    {
      schema: {
        operationId: "AdminRevokeApiKey",
        summary: "Revoke an API key",
        tags: ["operator"],
        security,
        body: Type.Object({ apiKey: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
        response: {
          200: Type.Object({ revoked: Type.Literal(true) }, { additionalProperties: false }),
          ...problems(400, 401, 404, 415),
        },
      },
    },
    async (request) => {
      const revoked = await ctx.store.transaction((tx) => revokeApiKey(tx, request.body.apiKey, nowIso()));
      if (!revoked) throw new Problem("api_key_not_found", "No live API key with this value.");
      return { revoked: true as const };
    },
  );
}
