// Per-client-address request limits of the routes that take no credentials (product §17, issue 42): the payer's surfaces and the card provider's webhook.
import type { FastifyRequest } from "fastify";
import type { Config } from "../config.ts";
import { type AddressLimit, addressLimit, addressLimited } from "./addressLimits.ts";
import { chooseLanguage } from "./pay/messages.ts";
import { renderRateLimited } from "./pay/render.ts";
import { PAY_HEADERS } from "./pay.ts";
import type { App } from "./routeHost.ts";

/** The limits of routes without credentials: each counts its own window per client address. */
export type UnauthenticatedSurface = "payer" | "webhook";

/**
 * The payer's surfaces: the invoice page and every action of it (status, events, QR code, sandbox
 * buttons, card checkout), payment links, refund claims and subscriptions' pages (with their
 * renewals signed ahead) and customers' deposit addresses' pages. By prefix, so a route added under one of them is limited without anyone
 * remembering to.
 */
const PAYER_PREFIXES = ["/pay/", "/l/", "/refund/", "/s/", "/d/"] as const;
/**
 * The payer's page's two static files: answered from memory at a constant cost and cached by the
 * browser, and the limit's own HTML page needs its style sheet.
 */
const STATIC_PREFIX = "/pay/assets/";
const WEBHOOK_PREFIX = "/webhooks/";

/** The limit a route (by its URL pattern) counts against; null for a credentialed, static or unknown route. */
export function unauthenticatedSurface(routeUrl: string | undefined): UnauthenticatedSurface | null {
  if (routeUrl === undefined || routeUrl.startsWith(STATIC_PREFIX)) return null;
  if (PAYER_PREFIXES.some((prefix) => routeUrl.startsWith(prefix))) return "payer";
  return routeUrl.startsWith(WEBHOOK_PREFIX) ? "webhook" : null;
}

/** A browser navigating (a page or a form post) gets a page; scripts and API clients get the problem. */
function wantsPage(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  return typeof accept === "string" && accept.includes("text/html");
}

/**
 * Counts each request to a route without credentials against its surface's window for the client
 * address, before anything else reads the request; over the limit: 429 `rate_limited` with
 * Retry-After (a page for a browser). The count is synchronous in this process's memory, so any
 * number of parallel requests from one address passes at most the limit.
 */
export function registerUnauthenticatedLimits(app: App, config: Config): void {
  const limits: Record<UnauthenticatedSurface, AddressLimit | null> = {
    payer: addressLimit(app, config.payerRateLimitPerMinute),
    webhook: addressLimit(app, config.webhookRateLimitPerMinute),
  };
  if (limits.payer === null && limits.webhook === null) return;
  // Callback-style: every other route passes synchronously, without a promise.
  app.addHook("onRequest", (request, reply, done) => {
    const surface = unauthenticatedSurface(request.routeOptions.url);
    const limit = surface === null ? null : limits[surface];
    if (limit === null) {
      done();
      return;
    }
    limit(request, reply).then((over) => {
      if (!over) done();
      else if (surface === "payer" && wantsPage(request)) {
        const lang = chooseLanguage((request.query as { lang?: unknown }).lang, request.headers["accept-language"]);
        reply.code(429).headers(PAY_HEADERS).type("text/html; charset=utf-8").send(renderRateLimited(lang));
      } else done(addressLimited("requests"));
    }, done);
  });
}
