// Operational routes: liveness, readiness (the store answers) and the currency icons the catalog points at.
import { Type } from "typebox";
import type { App } from "./app.ts";
import type { ServiceContext } from "./context.ts";
import { Problem, sendProblem } from "./problem.ts";

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
  app.get(
    "/healthz",
    {
      schema: {
        tags: ["operations"],
        summary: "Liveness",
        response: { 200: Type.Object({ status: Type.Literal("ok") }) },
      },
    },
    async () => ({ status: "ok" as const }),
  );
  app.get(
    "/readyz",
    {
      schema: {
        tags: ["operations"],
        summary: "Readiness: the store answers",
        response: { 200: Type.Object({ status: Type.Literal("ready") }) },
      },
    },
    async (request, reply) => {
      try {
        await ctx.store.ping();
        return { status: "ready" as const };
      } catch (error) {
        request.log.warn({ err: error }, "store not ready");
        return sendProblem(reply, new Problem("service_unavailable", "The store does not answer."));
      }
    },
  );
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
