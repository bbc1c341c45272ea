// GET /metrics (Prometheus text, behind METRICS_TOKEN or the admin token) and the hook that times every request and counts operations.
import type { FastifyRequest } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { UNMATCHED_ROUTE } from "../metrics.ts";
import { hashToken, tokensEqual } from "../store/secrets.ts";
import { isStoreUnavailable } from "../store/unavailable.ts";
import { metricsTokenCheck } from "./auth.ts";
import { Problem, problemCodeOf, sendProblem } from "./problem.ts";
import type { App } from "./routeHost.ts";
import { problems } from "./schemas.ts";
import { LocalThrottle } from "./throttles.ts";

/** Routes (method and pattern) whose answers are counted as operations, and the operation's name. */
const OPERATIONS: Record<string, string> = {
  "POST /public/v1/invoices/create": "invoice_create",
  "POST /public/v1/invoices/estimateFees": "fee_estimate",
  "POST /public/v1/withdrawals/create": "withdrawal",
  "POST /public/v1/refunds/refundCrypto": "refund_crypto",
  "POST /public/v1/refunds/refundFiat": "refund_fiat",
  "POST /sandbox/v1/invoices/:id/payments": "sandbox_payment",
  "POST /sandbox/v1/payouts/:requestId/outcome": "payout_outcome",
};

/** The route pattern a request matched (never the raw URL, so the label set stays bounded). */
function routeOf(request: FastifyRequest): string {
  // Requests the not-found handler answered carry no route pattern.
  return request.is404 ? UNMATCHED_ROUTE : (request.routeOptions.url ?? UNMATCHED_ROUTE);
}

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== "string") return null;
  return /^Bearer ([\x21-\x7e]{1,512})$/.exec(header)?.[1] ?? null;
}

/** The hook that times every request and counts operations: registered before any route and the 404 handler. */
export function registerMetricsHook(app: App, ctx: ServiceContext): void {
  const metrics = ctx.metrics;
  app.addHook("onResponse", (request, reply, done) => {
    const route = routeOf(request);
    const status = reply.statusCode;
    metrics.httpDuration.observe(
      { method: request.method, route, status_code: String(status) },
      reply.elapsedTime / 1000,
    );
    const operation = OPERATIONS[`${request.method} ${route}`];
    if (operation !== undefined) {
      // Refusals by their stable code (a closed set); any answer without one by its status.
      const outcome = status < 400 ? "accepted" : (problemCodeOf(reply) ?? `status_${status}`);
      metrics.operations.inc({ operation, outcome });
    }
    done();
  });
}

/** GET /metrics: registered with the other routes, after the OpenAPI plugin, so that it is documented. */
export function registerMetricsRoute(app: App, ctx: ServiceContext): void {
  const metrics = ctx.metrics;
  const metricsTokenHash = ctx.config.metricsToken === null ? null : hashToken(ctx.config.metricsToken);
  const local = new LocalThrottle();
  app.get(
    "/metrics",
    {
      schema: {
        operationId: "Metrics",
        tags: ["operations"],
        summary: "Prometheus metrics",
        description:
          "Prometheus text format. Bearer METRICS_TOKEN (when configured) or the admin token. Figures read from the store are counted at scrape time; when the store does not answer, the scrape still succeeds with `payments_store_up 0`.",
        security: [{ adminToken: [] }],
        response: {
          200: {
            description: "The metrics in Prometheus' text format",
            content: { "text/plain": { schema: { type: "string" } } },
          },
          ...problems(401),
        },
      },
    },
    async (request, reply) => {
      // The operator token is compared here too: guesses count against the same per-address budget.
      const accepted = await metricsTokenCheck(ctx, local, request, reply);
      const token = bearerToken(request);
      // Both comparisons run whatever the first one says (constant time, no hint which token matched).
      const asMetrics = token !== null && metricsTokenHash !== null && tokensEqual(token, metricsTokenHash);
      const asAdmin = token !== null && tokensEqual(token, ctx.adminTokenHash);
      if (!asMetrics && !asAdmin) {
        return sendProblem(
          reply,
          new Problem(
            "invalid_metrics_token",
            "Send the metrics token (or the operator token) as authorization: Bearer <token>.",
          ),
        );
      }
      await accepted();
      const text = await metrics.scrape((collector, error) => {
        if (isStoreUnavailable(error)) request.log.warn({ err: error, collector }, "metrics: store unavailable");
        else request.log.error({ err: error, collector }, "metrics: collector failed");
      });
      return reply.type(metrics.contentType).header("cache-control", "no-store").send(text);
    },
  );
}
