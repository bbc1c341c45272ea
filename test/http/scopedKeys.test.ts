// Scoped API keys (product §31): a key's scopes and client address ranges are enforced before any work, full keys are unchanged, and the key list shows scopes, ranges and last use.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { invitedUser } from "../support/dashboard.ts";
import { createInvoice } from "../support/invoices.ts";
import { until } from "../support/process.ts";
import { completedInvoice, refundCrypto } from "../support/refunds.ts";
import {
  type Answer,
  admin,
  call,
  expectProblem,
  merchant,
  startTestServer,
  type TestServer,
} from "../support/server.ts";
import { balanceOf, type FundedMerchant, fundedMerchant, withdraw } from "../support/withdrawals.ts";

/** A call from `address`: TRUST_PROXY believes 127.0.0.1's X-Forwarded-For. */
function from(server: TestServer, address: string, apiKey: string, method: string, path: string, body?: unknown) {
  return call(server.baseUrl, method, path, { headers: { "x-api-key": apiKey, "x-forwarded-for": address }, body });
}

describe("scoped API keys", () => {
  let server: TestServer;
  let m: FundedMerchant;
  const issue = (body: Record<string, unknown>) => admin(server, "POST", `/merchants/${m.id}/api-keys`, body);
  const listed = async () => (await admin(server, "GET", `/merchants/${m.id}/api-keys`)).body as Record<string, any>[];
  const item = async (apiKey: string) => (await listed()).find((k) => apiKey.startsWith(k.prefix));

  beforeAll(async () => {
    server = await startTestServer({ env: { TRUST_PROXY: "127.0.0.1" } });
    m = await fundedMerchant(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it("a key with invoices:write makes invoices and nothing else, refused before any work", async () => {
    const key = await issue({ scopes: ["invoices:write"] });
    expect(key.status).toBe(200);
    const scoped = { ...m, apiKey: key.body.apiKey, secretKey: key.body.secretKey };
    const invoice = await createInvoice(server, scoped.apiKey, { currency: "USDT", amount: "5" });
    expect(invoice.status).toBe("pending");
    expect((await merchant(server, scoped.apiKey, "POST", "/public/v1/invoices/estimateFees", {})).status).toBe(400);

    const paid = await completedInvoice(server, m, { currency: "USDT", amount: "5" });
    const before = await balanceOf(server, m.id);
    expectProblem((await withdraw(server, scoped)).answer, 403, "insufficient_scope");
    const refund = await refundCrypto(server, scoped, { invoiceId: paid.id, address: `0x${"ab".repeat(20)}` });
    expectProblem(refund.answer, 403, "insufficient_scope");
    expect(await balanceOf(server, m.id)).toBe(before);
    expectProblem(await merchant(server, scoped.apiKey, "GET", "/public/v1/balances"), 403, "insufficient_scope");
    expectProblem(
      await merchant(server, scoped.apiKey, "GET", `/public/v1/invoices/${invoice.id}`),
      403,
      "insufficient_scope",
    );
    // Before the body is read: a malformed body is still refused for its scope.
    const raw = await call(server.baseUrl, "POST", "/public/v1/withdrawals/create", {
      headers: { "x-api-key": scoped.apiKey, "content-type": "application/json" },
      rawBody: "{not json",
    });
    expectProblem(raw, 403, "insufficient_scope");
    // The full key still withdraws.
    expect((await withdraw(server, m)).answer.status).toBe(200);
  });

  it("read covers every GET, invoices:read the invoices only", async () => {
    const reader = (await issue({ scopes: ["read"] })).body.apiKey;
    const invoiceReader = (await issue({ scopes: ["invoices:read"] })).body.apiKey;
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "5" });
    for (const key of [reader, invoiceReader]) {
      expect((await merchant(server, key, "GET", `/public/v1/invoices/${invoice.id}`)).status).toBe(200);
    }
    expect((await merchant(server, reader, "GET", "/public/v1/balances")).status).toBe(200);
    expectProblem(await merchant(server, invoiceReader, "GET", "/public/v1/balances"), 403, "insufficient_scope");
    expectProblem(
      await merchant(server, reader, "POST", "/public/v1/invoices/create", { currency: "USDT", amount: "5" }),
      403,
      "insufficient_scope",
    );
    // Routes without a key stay open to any key.
    expect((await merchant(server, invoiceReader, "GET", "/public/v1/currencies")).status).toBe(200);
  });

  it("a key limited to address ranges is refused from elsewhere, allowed from inside, IPv4-mapped too", async () => {
    const key = await issue({ allowedAddresses: ["10.0.0.0/8", "2001:db8::/32"] });
    expect(key.status).toBe(200);
    const apiKey = key.body.apiKey as string;
    expectProblem(await from(server, "192.168.1.7", apiKey, "GET", "/public/v1/me"), 403, "address_not_allowed");
    expectProblem(await from(server, "2001:db9::1", apiKey, "GET", "/public/v1/me"), 403, "address_not_allowed");
    expect((await from(server, "2001:db8::7", apiKey, "GET", "/public/v1/me")).status).toBe(200);
    expect((await from(server, "::ffff:10.9.9.9", apiKey, "GET", "/public/v1/me")).status).toBe(200);
    expect((await from(server, "10.1.2.3", apiKey, "GET", "/public/v1/me")).status).toBe(200);
    // The last use, written off the request's path at most once a minute: the first admitted call.
    const used = await until(
      "the key's last use",
      async () => ((await item(apiKey))?.lastUsedAt ? item(apiKey) : null),
      {
        timeoutMs: 5000,
        everyMs: 20,
      },
    );
    expect(used).toMatchObject({ scopes: null, allowedAddresses: ["10.0.0.0/8", "2001:db8::/32"] });
    expect(["2001:db8::7", "10.9.9.9", "10.1.2.3"]).toContain(used?.lastUsedFrom);
  });

  it("full keys are unchanged: listed without scopes or ranges, usable from anywhere for everything", async () => {
    expect((await from(server, "203.0.113.9", m.apiKey, "GET", "/public/v1/balances")).status).toBe(200);
    const full = await until(
      "the full key's last use",
      async () => ((await item(m.apiKey))?.lastUsedAt ? item(m.apiKey) : null),
      {
        timeoutMs: 5000,
        everyMs: 20,
      },
    );
    expect(full).toMatchObject({ scopes: null, allowedAddresses: null, legacy: false });
    expect(typeof full?.lastUsedFrom).toBe("string");
  });

  it("refuses unknown, empty or repeated scopes and ranges that are not CIDR", async () => {
    const refused = async (body: Record<string, unknown>, code: string, pointer: string) => {
      const answer: Answer<any> = await issue(body);
      expectProblem(answer, 400, code);
      expect(answer.body.errors?.[0]?.pointer).toBe(pointer);
    };
    await refused({ scopes: [] }, "validation_failed", "/scopes");
    await refused({ scopes: ["invoices:write", "invoices:write"] }, "validation_failed", "/scopes");
    await refused({ scopes: ["everything"] }, "validation_failed", "/scopes/0");
    await refused({ allowedAddresses: ["10.1.2.3/8"] }, "invalid_address_range", "/allowedAddresses/0");
    await refused({ allowedAddresses: ["10.0.0.0/8", "example.com"] }, "invalid_address_range", "/allowedAddresses/1");
    await refused({ allowedAddresses: ["::1/129"] }, "invalid_address_range", "/allowedAddresses/0");
  });

  it("the dashboard makes scoped keys and lists them", async () => {
    const owner = await invitedUser(server, m.id, "owner");
    const created = await owner.call("POST", "/api-keys", { scopes: ["read"], allowedAddresses: ["127.0.0.1/32"] });
    expect(created.status).toBe(200);
    const shown = (await owner.call("GET", "/api-keys")).body.find((k: { prefix: string }) =>
      created.body.apiKey.startsWith(k.prefix),
    );
    expect(shown).toMatchObject({ scopes: ["read"], allowedAddresses: ["127.0.0.1/32"], lastUsedFrom: null });
    expectProblem(
      await owner.call("POST", "/api-keys", { allowedAddresses: ["nowhere"] }),
      400,
      "invalid_address_range",
    );
  });
});
