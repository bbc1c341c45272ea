// Dashboard audit log: who did what, newest first.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { listAudit } from "../../store/dashboard.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { BeforeLimitQuery } from "../shapes.ts";
import { security, tags } from "./moneyCommon.ts";
import type { DashboardScope } from "./session.ts";
import { requireRole } from "./session.ts";

export function registerDashboardAudit(
  api: App,
  ctx: ServiceContext,
  { session }: Pick<DashboardScope, "session">,
): void {
  api.get(
    "/audit",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardAuditLog",
        summary: "The audit log, newest first",
        tags,
        security,
        querystring: BeforeLimitQuery,
        response: {
          200: Type.Object(
            {
              items: Type.Array(
                Type.Object(
                  {
                    id: Type.String(),
                    userId: Type.Union([Type.String(), Type.Null()]),
                    userEmail: Type.Union([Type.String(), Type.Null()]),
                    action: Type.String(),
                    target: Type.Union([Type.String(), Type.Null()]),
                    address: Type.Union([Type.String(), Type.Null()]),
                    createdAt: Type.String(),
                  },
                  { additionalProperties: false },
                ),
              ),
              nextBefore: Type.Union([Type.String(), Type.Null()]),
            },
            { additionalProperties: false },
          ),
          ...problems(400, 401, 403),
        },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "readAudit");
      const limit = Number(request.query.limit ?? "50");
      const items = await listAudit(ctx.store, user.merchantId, request.query.before, limit);
      const last = items.at(-1);
      return { items, nextBefore: items.length === limit && last ? last.id : null };
    },
  );
}
