// Operational routes: liveness, readiness (the store answers) and the currency icons the catalog points at.
import { Type } from "typebox";
import type { ServiceContext } from "../app/context.ts";
import { Problem, sendProblem } from "./problem.ts";
import type { App } from "./routeHost.ts";
import { problems } from "./schemas.ts";

const ICON_COLORS: Record<string, string> = {
  usdt: "#26a17b",
  usdc: "#2775ca",
  eth: "#627eea",
  eur: "#003399",
  usd: "#85bb65",
};

function iconSvg(ticker: string, dark: boolean): string {
  const fill = ICON_COLORS[ticker] ?? "#888888";
  const text = dark ? "#111111" : "#ffffff";
  const label = ticker.toUpperCase().slice(0, 4);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64"><circle cx="32" cy="32" r="32" fill="${fill}"/><text x="32" y="38" font-family="sans-serif" font-size="16" font-weight="bold" text-anchor="middle" fill="${text}">${label}</text></svg>`;
}

export function registerOperationalRoutes(app: App, ctx: ServiceContext): void {
  registerLiveness(app);
  registerReadiness(app, ctx);
  registerIcons(app);
}

function registerLiveness(app: App): void {
  app.get(
    "/healthz",
    {
      schema: {
        operationId: "Liveness",
        tags: ["operations"],
        summary: "Liveness",
        security: [],
        response: { 200: Type.Object({ status: Type.Literal("ok") }) },
      },
    },
    async () => ({ status: "ok" as const }),
  );
}

function registerReadiness(app: App, ctx: ServiceContext): void {
  app.get(
    "/readyz",
    {
      schema: {
        operationId: "Readiness",
        tags: ["operations"],
        summary:
          "Readiness: the store answers; live networks whose node failed are listed (the service still takes requests)",
        security: [],
        response: {
          ...problems(503),
          200: Type.Object({
            status: Type.Literal("ready"),
            networks: Type.Optional(
              Type.Array(
                Type.Object({
                  network: Type.String(),
                  ok: Type.Boolean(),
                  error: Type.Union([Type.String(), Type.Null()]),
                  since: Type.Union([Type.String(), Type.Null()]),
                }),
              ),
            ),
          }),
        },
      },
    },
    async (request, reply) => {
      try {
        await ctx.store.ping();
        if (ctx.config.serviceMode !== "live") return { status: "ready" as const };
        // A failing node does not make the service unready (invoices can still be created and read);
        // it is shown here and in GET /admin/v1/networks, and nothing is credited from it.
        const networks = await ctx.store.db
          .selectFrom("networks")
          .select(["name", "node_error", "node_error_at"])
          .orderBy("name")
          .execute();
        return {
          status: "ready" as const,
          networks: networks.map((n) => ({
            network: n.name,
            ok: n.node_error === null,
            error: n.node_error,
            since: n.node_error_at,
          })),
        };
      } catch (error) {
        request.log.warn({ err: error }, "store not ready");
        return sendProblem(reply, new Problem("service_unavailable", "The store does not answer."));
      }
    },
  );
}

function registerIcons(app: App): void {
  app.get(
    "/icons/:file",
    {
      schema: { hide: true, params: Type.Object({ file: Type.String({ pattern: "^[a-z0-9]{1,12}(-dark)?\\.svg$" }) }) },
    },
    async (request, reply) => {
      const match = /^([a-z0-9]+)(-dark)?\.svg$/.exec(request.params.file);
      const ticker = match?.[1] ?? "";
      return reply
        .type("image/svg+xml")
        .header("cache-control", "public, max-age=86400")
        .send(iconSvg(ticker, match?.[2] !== undefined));
    },
  );
}
