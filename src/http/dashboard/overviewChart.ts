// GET /dashboard/v1/overview/chart (product §14): the overview's picture, volume paid per day and currency and invoice outcomes over the last 30 UTC days.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { CHART_DAYS, chartDays, overviewChart } from "../../domain/overviewChart.ts";
import { assert } from "../../domain/result.ts";
import { findCurrency } from "../../store/currencies.ts";
import { invoiceDayGroups } from "../../store/overviewChart.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { security, tags } from "./moneyCommon.ts";
import { type DashboardScope, requireRole } from "./session.ts";

const Day = Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "A UTC day, YYYY-MM-DD" });
const Count = Type.Integer({ minimum: 0 });

const OverviewChart = Type.Object(
  {
    from: Day,
    to: Day,
    outcomes: Type.Array(
      Type.Object({ day: Day, completed: Count, expired: Count, other: Count }, { additionalProperties: false }),
      {
        description: `One entry per day, oldest first (${CHART_DAYS} days): invoices created that day, by how they ended so far. completed: completed, refund_processing, refunded; expired: expired, failed (expired part-paid); other: still open or under screening`,
      },
    ),
    volume: Type.Array(
      Type.Object(
        {
          currency: Type.String(),
          total: Type.String({ description: "The sum of perDay" }),
          perDay: Type.Array(Type.String(), { description: "One decimal amount per day, aligned with outcomes" }),
        },
        { additionalProperties: false },
      ),
      {
        description:
          "Per currency that took money, by ticker: what payers paid (final_amount) for the invoices created that day that completed",
      },
    ),
  },
  { additionalProperties: false },
);

export function registerOverviewChart(api: App, ctx: ServiceContext, { session }: Pick<DashboardScope, "session">) {
  api.get(
    "/overview/chart",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardOverviewChart",
        tags,
        security,
        summary: `The overview's picture: volume paid per UTC day and currency, and invoice outcomes, over the last ${CHART_DAYS} days`,
        response: { 200: OverviewChart, ...problems(401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const days = chartDays(new Date());
      const groups = await invoiceDayGroups(ctx.store, user.merchantId, `${days[0]}T00:00:00.000Z`);
      // The currencies the rows name: a handful, each read through the catalog's cache.
      const decimals = new Map<string, number>();
      for (const ticker of new Set(groups.map((g) => g.currency))) {
        const currency = await findCurrency(ctx.store, ticker);
        assert(currency, `invoices in ${ticker} have a catalog currency`);
        decimals.set(ticker, currency.decimals);
      }
      return overviewChart(days, groups, (ticker) => decimals.get(ticker) ?? 0);
    },
  );
}
