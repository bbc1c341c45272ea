// Dashboard overview: balances and recent activity in plain sentences.
import { Type } from "typebox";
import { balancesByTicker } from "../../app/balances.ts";
import type { ServiceContext } from "../../app/context.ts";
import { describeEvent } from "../../domain/activity.ts";
import { invariantViolation } from "../../domain/result.ts";
import { listEvents } from "../../store/events.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { RECENT_ACTIVITY } from "./common.ts";
import { security, tags } from "./moneyCommon.ts";
import type { DashboardScope } from "./session.ts";
import { requireRole } from "./session.ts";

/** The overview: balances per ticker with their networks, and the newest events. */
const OverviewAnswer = Type.Object(
  {
    balances: Type.Array(
      Type.Object(
        {
          currency: Type.String({ description: "The ticker" }),
          available: Type.String({ description: "The total over the ticker's networks" }),
          networks: Type.Array(
            Type.Object(
              { network: Type.String(), internalTicker: Type.String(), available: Type.String() },
              { additionalProperties: false },
            ),
            { description: "Each network's part (balances are per catalog entry, product §23)" },
          ),
        },
        { additionalProperties: false },
      ),
      { description: "One row per ticker" },
    ),
    recent: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          type: Type.String({ description: "The event's type, e.g. invoice.completed" }),
          subjectId: Type.String({
            description: "The invoice, withdrawal, refund, subscription or deposit it is about",
          }),
          summary: Type.String({ description: "What happened, as an English sentence with its amounts" }),
          createdAt: Type.String(),
        },
        { additionalProperties: false },
      ),
      { description: `The merchant's ${RECENT_ACTIVITY} newest events, newest first` },
    ),
  },
  { additionalProperties: false },
);

export function registerDashboardOverview(
  api: App,
  ctx: ServiceContext,
  { session }: Pick<DashboardScope, "session">,
): void {
  api.get(
    "/overview",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardOverview",
        summary: "Balances and recent activity",
        tags,
        security,
        response: {
          200: OverviewAnswer,
          ...problems(401),
        },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const events = await listEvents(ctx.store, user.merchantId, { limit: RECENT_ACTIVITY });
      // No cursor and no dates: nothing in this window can be refused.
      if (!events.ok) throw invariantViolation(`the newest events cannot be listed: ${events.detail}`);
      return {
        balances: await balancesByTicker(ctx.store, user.merchantId),
        recent: events.value.data.map((e) => ({
          id: e.id,
          type: e.type,
          subjectId: e.subjectId,
          summary: describeEvent(e.type, e.body),
          createdAt: e.createdAt,
        })),
      };
    },
  );
}
