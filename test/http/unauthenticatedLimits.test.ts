// Every route without credentials is bounded per client address (issue 42 item 5): 200 parallel requests from one address meet 429, several addresses each keep their own window, other surfaces are untouched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { unauthenticatedSurface } from "../../src/http/unauthenticatedLimits.ts";
import { createInvoice } from "../support/invoices.ts";
import { admin, call, createMerchant, merchant, startTestServer, type TestServer } from "../support/server.ts";
import { type StripeDouble, startStripeDouble, stripeEnv } from "../support/stripeDouble.ts";

/** Small limits, so a burst of 200 shows them; TRUST_PROXY lets X-Forwarded-For play several client addresses. */
const LIMIT = 10;
const LIMITED_ENV = {
  PAYER_RATE_LIMIT_PER_MINUTE: String(LIMIT),
  WEBHOOK_RATE_LIMIT_PER_MINUTE: String(LIMIT),
  TRUST_PROXY: "127.0.0.1",
};

interface Request {
  method: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

interface Outcome {
  status: number;
  code: string | null;
  retryAfter: string | null;
}

/** One request from `address`; a stream's or a page's body is dropped unread, a problem's code is kept. */
async function send(baseUrl: string, address: string, request: Request): Promise<Outcome> {
  const response = await fetch(`${baseUrl}${request.path}`, {
    method: request.method,
    redirect: "manual",
    headers: { "x-forwarded-for": address, ...request.headers },
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  const problem = response.headers.get("content-type")?.startsWith("application/problem+json") === true;
  const code = problem ? ((await response.json()) as { code: string }).code : null;
  if (!problem) await response.body?.cancel();
  return { status: response.status, code, retryAfter: response.headers.get("retry-after") };
}

/** `count` requests at once from `address`. */
function burst(baseUrl: string, address: string, request: Request, count: number): Promise<Outcome[]> {
  return Promise.all(Array.from({ length: count }, () => send(baseUrl, address, request)));
}

/**
 * The burst met the limit: exactly LIMIT requests were let through (whatever the route then
 * answered, e.g. 429 `too_many_streams` for a fifth stream of one invoice), every other one is 429
 * `rate_limited` with Retry-After.
 */
function expectLimited(outcomes: Outcome[], what: string): void {
  const refused = outcomes.filter((o) => o.code === "rate_limited");
  expect(outcomes.length - refused.length, what).toBe(LIMIT);
  for (const o of refused) {
    expect(o.status, what).toBe(429);
    expect(Number(o.retryAfter), what).toBeGreaterThan(0);
  }
}

/** Routes under these prefixes take credentials (an API key: the public API and the x402 facilitator; the operator token, a dashboard session, the metrics token). */
const CREDENTIALED = ["/public/v1/", "/admin/v1/", "/sandbox/v1/", "/dashboard/v1/", "/metrics", "/x402/v1/"];
/**
 * Routes left unlimited on purpose: constant answers without the store (static files, icons, the API
 * document), and the probes a load balancer must always reach (/readyz is one ping of the store).
 * The dashboard's sign-in and invitation routes are under the database-counted guessing throttles.
 */
const UNLIMITED = ["/healthz", "/readyz", "/openapi.json", "/docs", "/icons/", "/dashboard", "/pay/assets/"];

function expectEveryRouteDecided(server: TestServer): void {
  const undecided = server.app.registeredRoutes.filter(
    (r) =>
      unauthenticatedSurface(r.url) === null &&
      !CREDENTIALED.some((p) => r.url.startsWith(p)) &&
      !UNLIMITED.some((p) => r.url.startsWith(p)),
  );
  expect(undecided).toEqual([]);
}

describe("the payer's surfaces (sandbox)", () => {
  let server: TestServer;
  let invoiceId: string;
  let linkId: string;
  beforeAll(async () => {
    server = await startTestServer({ env: LIMITED_ENV });
    const m = await createMerchant(server);
    invoiceId = (await createInvoice(server, m.apiKey, { currency: "USDT", amount: "10" })).id;
    const link = await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", {
      currency: "USDT",
      amount: "5",
    });
    linkId = link.body.id;
  });
  afterAll(async () => {
    await server?.close();
  });

  it("decides a limit, or why none, for every route", () => {
    expect(unauthenticatedSurface("/pay/:id")).toBe("payer");
    expect(unauthenticatedSurface("/pay/assets/:file")).toBeNull();
    expectEveryRouteDecided(server);
  });

  it("answers 429 to 200 parallel requests from one address, on each route kind", async () => {
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const routes: Request[] = [
      { method: "GET", path: `/pay/${invoiceId}` },
      { method: "GET", path: `/pay/${invoiceId}/status` },
      { method: "GET", path: `/pay/${invoiceId}/qr.svg` },
      { method: "GET", path: `/pay/${invoiceId}/events` },
      { method: "POST", path: "/pay/no-such-invoice/sandbox/pay" },
      { method: "GET", path: `/l/${linkId}` },
      { method: "POST", path: `/l/${linkId}`, headers: form, body: "amount=5" },
      { method: "GET", path: "/refund/no-such-token" },
      {
        method: "POST",
        path: "/refund/no-such-token",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ address: "0x0000000000000000000000000000000000000001" }),
      },
    ];
    // Each route kind from an address of its own, so each shows its own limit.
    for (const [i, route] of routes.entries()) {
      expectLimited(await burst(server.baseUrl, `198.51.100.${i + 1}`, route, 200), `${route.method} ${route.path}`);
    }
  });

  it("keeps one window per address: several addresses at once each get the limit", async () => {
    const addresses = ["203.0.113.1", "203.0.113.2", "2001:db8:1::1", "2001:db8:2::1", "203.0.113.3"];
    const request: Request = { method: "GET", path: `/pay/${invoiceId}/status` };
    const outcomes = await Promise.all(addresses.map((a) => burst(server.baseUrl, a, request, 40)));
    for (const [i, answers] of outcomes.entries()) expectLimited(answers, addresses[i] as string);
    // An IPv6 client is counted by its /64: another host of an exhausted /64 is refused too.
    expect((await send(server.baseUrl, "2001:db8:1::99", request)).status).toBe(429);
  });

  it("answers a browser over the limit with a page, and leaves static files and the other surfaces alone", async () => {
    const address = "192.0.2.7";
    expectLimited(
      await burst(server.baseUrl, address, { method: "GET", path: `/pay/${invoiceId}/status` }, 30),
      "status",
    );
    const page = await fetch(`${server.baseUrl}/pay/${invoiceId}?lang=fr`, {
      headers: { "x-forwarded-for": address, accept: "text/html,application/xhtml+xml,*/*;q=0.8" },
    });
    expect(page.status).toBe(429);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(Number(page.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(await page.text()).toContain("Trop de requêtes");

    const from = { "x-forwarded-for": address };
    expect((await call(server.baseUrl, "GET", "/icons/usdt.svg", { headers: from })).status).toBe(200);
    expect((await call(server.baseUrl, "GET", "/healthz", { headers: from })).status).toBe(200);
    const key = { ...from, "x-api-key": server.demo.apiKey };
    expect((await call(server.baseUrl, "GET", "/public/v1/me", { headers: key })).status).toBe(200);
    expect((await admin(server, "GET", "/currencies")).status).toBe(200);
  });

  it("reads its defaults and 0 from the environment", () => {
    const base = { DATABASE_URL: "sqlite::memory:", SECRET_ENCRYPTION_KEY: "a".repeat(64) };
    const defaults = loadConfig(base);
    expect([defaults.payerRateLimitPerMinute, defaults.webhookRateLimitPerMinute]).toEqual([120, 600]);
    const off = loadConfig({ ...base, PAYER_RATE_LIMIT_PER_MINUTE: "0", WEBHOOK_RATE_LIMIT_PER_MINUTE: "0" });
    expect([off.payerRateLimitPerMinute, off.webhookRateLimitPerMinute]).toEqual([0, 0]);
    expect(() => loadConfig({ ...base, PAYER_RATE_LIMIT_PER_MINUTE: "-1" })).toThrow("PAYER_RATE_LIMIT_PER_MINUTE");
  });
});

describe("card checkout and the card provider's webhook (live)", () => {
  let double: StripeDouble;
  let server: TestServer;
  beforeAll(async () => {
    double = await startStripeDouble();
    server = await startTestServer({ env: { ...stripeEnv(double), ...LIMITED_ENV } });
  });
  afterAll(async () => {
    await server?.close();
    await double?.close();
  });

  it("decides a limit, or why none, for every route", () => {
    expect(unauthenticatedSurface("/webhooks/stripe")).toBe("webhook");
    expectEveryRouteDecided(server);
  });

  it("answers 429 to 200 parallel requests from one address, each surface in its own window", async () => {
    const address = "198.51.100.77";
    const checkout: Request = { method: "POST", path: "/pay/no-such-invoice/card" };
    expectLimited(await burst(server.baseUrl, address, checkout, 200), "card checkout");
    // The webhook counts apart from the payer's surfaces: the same address still has its whole window.
    const webhook: Request = {
      method: "POST",
      path: "/webhooks/stripe",
      headers: { "content-type": "application/json", "stripe-signature": "t=1,v1=forged" },
      body: "{}",
    };
    const answers = await burst(server.baseUrl, address, webhook, 200);
    expectLimited(answers, "webhook");
    expect(answers.filter((o) => o.status !== 429).every((o) => o.code === "invalid_webhook_signature")).toBe(true);
  });
});
