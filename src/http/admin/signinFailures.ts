// Operator API: failed dashboard sign-ins for emails without an account (product §18), kept by client address alone.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { listUnattributedSigninFailures } from "../../store/dashboard.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { BeforeLimitQuery } from "../shapes.ts";

export function registerAdminSigninFailures(app: App, ctx: ServiceContext): void {
  app.get(
    "/signin-failures",
    {
      schema: {
        operationId: "AdminListSigninFailures",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        summary:
          "Failed dashboard sign-ins for an email that has no account, newest first: the client address and the time only (a failure for an existing account is in its merchant's audit log). Kept 30 days.",
        querystring: BeforeLimitQuery,
        response: {
          200: Type.Object(
            {
              items: Type.Array(
                Type.Object(
                  { id: Type.String(), address: Type.String(), createdAt: Type.String() },
                  { additionalProperties: false },
                ),
              ),
              nextBefore: Type.Union([Type.String(), Type.Null()]),
            },
            { additionalProperties: false },
          ),
          ...problems(400, 401),
        },
      },
    },
    async (request) => {
      const limit = Number(request.query.limit ?? "50");
      const items = await listUnattributedSigninFailures(ctx.store, request.query.before, limit);
      const last = items.at(-1);
      return { items, nextBefore: items.length === limit && last ? last.id : null };
    },
  );
}
