// The subscription's page /s/{id} (product §29) on the sandbox: its plan, status, period and open invoice in the payer's language; no pre-authorization (live only) and nothing stored when asked; limited per client address like the other payer's pages.
import { describe, expect, it } from "vitest";
import { unauthenticatedSurface } from "../../src/http/unauthenticatedLimits.ts";
import { useTestServer } from "../support/fixture.ts";
import { call, createMerchant, expectProblem, merchant } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";

const LIMIT = 40;
const server = useTestServer({ env: { PAYER_RATE_LIMIT_PER_MINUTE: String(LIMIT), TRUST_PROXY: "127.0.0.1" } });
const FROM = `0x${"ab".repeat(20)}`;

async function subscription(fields: Record<string, unknown> = {}) {
  const m = await createMerchant(server, { merchantName: "Northwind Coffee" });
  const plan = await merchant(server, m.apiKey, "POST", "/public/v1/plans", {
    name: "Beans monthly",
    currency: "USDT",
    amount: "12.5",
    interval: "month",
    ...fields,
  });
  expect(plan.status, plan.text).toBe(200);
  const { answer } = await signedCall(server.baseUrl, {
    apiKey: m.apiKey,
    secret: m.secretKey,
    path: "/public/v1/subscriptions",
    body: { planId: plan.body.id, customer: { reference: "cust-1" } },
  });
  expect(answer.status, answer.text).toBe(200);
  return { m, sub: answer.body };
}

async function page(path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${server.baseUrl}${path}`, { headers });
  return { status: response.status, headers: response.headers, html: await response.text() };
}

async function storedRenewals() {
  const row = await server.ctx.store.db
    .selectFrom("renewal_authorizations")
    .select((eb) => eb.fn.countAll().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const signed = {
  network: "ethereum",
  from: FROM,
  authorizations: [
    {
      period: 2,
      nonce: `0x${"11".repeat(32)}`,
      value: "1",
      validAfter: "1",
      validBefore: "2",
      signature: `0x${"22".repeat(65)}`,
    },
  ],
};

describe("the subscription's page", () => {
  it("shows the plan, the status, the period and the open invoice, with the page's headers, in the payer's language", async () => {
    const { sub } = await subscription();
    expect(sub.url).toBe(`${server.ctx.config.publicBaseUrl}/s/${sub.id}`);
    const shown = await page(`/s/${sub.id}`);
    expect(shown.status).toBe(200);
    expect(shown.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(shown.headers.get("x-frame-options")).toBe("DENY");
    expect(shown.html).toContain("Your subscription to Northwind Coffee");
    expect(shown.html).toContain('data-status="incomplete"');
    expect(shown.html).toContain("Waiting for the first payment");
    expect(shown.html).toContain("12.5 USDT every month");
    expect(shown.html).toContain(`href="${sub.openInvoice.url}?lang=en"`);
    expect(shown.html).toContain("Sandbox: test mode");
    // The sandbox shows status and invoice only: no signing ahead.
    expect(shown.html).not.toContain("data-renewal-wallet");
    const french = await page(`/s/${sub.id}`, { "accept-language": "fr-FR,fr;q=0.9" });
    expect(french.html).toContain("Votre abonnement chez Northwind Coffee");
    expect(french.html).toContain("12,5 USDT par mois");
    const missing = await page("/s/no-such-subscription?lang=de");
    expect(missing.status).toBe(404);
    expect(missing.html).toContain("Abonnement nicht gefunden");
  });

  it("offers and takes no pre-authorization in the sandbox, refuses bad input by code, and stores nothing", async () => {
    const { m, sub } = await subscription({ interval: "week", trialDays: 3 });
    const offer = await call(server.baseUrl, "GET", `/s/${sub.id}/authorizations?from=${FROM}&periods=3`);
    expectProblem(offer, 400, "authorization_unsupported");
    expectProblem(
      await call(server.baseUrl, "POST", `/s/${sub.id}/authorizations`, { body: signed }),
      400,
      "authorization_unsupported",
    );
    const tooMany = await call(server.baseUrl, "GET", `/s/${sub.id}/authorizations?from=${FROM}&periods=13`);
    expectProblem(tooMany, 400, "validation_failed");
    const thirteen = { ...signed, authorizations: Array(13).fill(signed.authorizations[0]) };
    expectProblem(
      await call(server.baseUrl, "POST", `/s/${sub.id}/authorizations`, { body: thirteen }),
      400,
      "validation_failed",
    );
    const badNonce = { ...signed, authorizations: [{ ...signed.authorizations[0], nonce: "0x12" }] };
    expectProblem(
      await call(server.baseUrl, "POST", `/s/${sub.id}/authorizations`, { body: badNonce }),
      400,
      "validation_failed",
    );
    expectProblem(
      await call(server.baseUrl, "POST", "/s/nope/authorizations", { body: signed }),
      404,
      "subscription_not_found",
    );
    const canceled = await merchant(server, m.apiKey, "POST", `/public/v1/subscriptions/${sub.id}/cancel`, {});
    expect(canceled.body.status, canceled.text).toBe("canceled");
    expectProblem(
      await call(server.baseUrl, "POST", `/s/${sub.id}/authorizations`, { body: signed }),
      409,
      "subscription_ended",
    );
    expect((await page(`/s/${sub.id}`)).html).toContain('data-status="canceled"');
    expect(await storedRenewals()).toBe(0);
  });

  it("counts against the payer's per-address limit", async () => {
    const { sub } = await subscription();
    expect(unauthenticatedSurface("/s/:id")).toBe("payer");
    expect(unauthenticatedSurface("/s/:id/authorizations")).toBe("payer");
    const headers = { "x-forwarded-for": "198.51.100.7" };
    const statuses = await Promise.all(
      Array.from(
        { length: LIMIT + 10 },
        async () => (await fetch(`${server.baseUrl}/s/${sub.id}`, { headers })).status,
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });
});
