// Live mode never shows a payer an address nobody controls: without a rail, crypto and fiat are refused (product §12, Gate).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CATALOG } from "../../src/domain/currencies.ts";
import { sandboxDepositAddress } from "../../src/domain/invoices.ts";
import { storeDigest } from "../support/digest.ts";
import { call, createMerchant, expectProblem, merchant, startTestServer, type TestServer } from "../support/server.ts";

let live: TestServer;
let sandbox: TestServer;
beforeAll(async () => {
  [live, sandbox] = await Promise.all([startTestServer({ env: { SERVICE_MODE: "live" } }), startTestServer()]);
});
afterAll(async () => {
  await Promise.all([live.close(), sandbox.close()]);
});

describe("the live-mode gate", () => {
  it("refuses CreateInvoice and EstimateFees in every catalog currency with currency_unavailable, changing nothing", async () => {
    const m = await createMerchant(live);
    const before = await storeDigest(live.ctx.store);
    for (const c of DEFAULT_CATALOG) {
      const created = await merchant(live, m.apiKey, "POST", "/public/v1/invoices/create", {
        currency: c.ticker,
        amount: 10,
      });
      expectProblem(created, 400, "currency_unavailable");
      expect(created.body.errors?.[0]?.pointer ?? created.body.detail).toBeTruthy();
      expect(created.text).not.toMatch(/0x[0-9a-f]{40}/);
      expectProblem(
        await merchant(live, m.apiKey, "POST", "/public/v1/invoices/estimateFees", { currency: c.ticker, amount: 10 }),
        400,
        "currency_unavailable",
      );
    }
    expect(await storeDigest(live.ctx.store)).toBe(before);
  });

  it("still lists the whole catalog", async () => {
    const listed = await call(live.baseUrl, "GET", "/public/v1/currencies");
    expect(listed.status).toBe(200);
    const tickers = JSON.stringify(listed.body);
    for (const c of DEFAULT_CATALOG) expect(tickers).toContain(`"${c.ticker}"`);
  });

  it("answers an unknown ticker as before: unknown_currency comes first", async () => {
    const m = await createMerchant(live);
    expectProblem(
      await merchant(live, m.apiKey, "POST", "/public/v1/invoices/create", { currency: "NOPE", amount: 10 }),
      400,
      "unknown_currency",
    );
  });

  it("leaves the sandbox unchanged: crypto invoices get their derived address", async () => {
    const created = await merchant(sandbox, sandbox.demo.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: 10,
    });
    expect(created.status).toBe(200);
    const row = await sandbox.ctx.store.transaction((tx) =>
      tx.db
        .selectFrom("invoices")
        .select("deposit_address")
        .where("id", "=", created.body.id)
        .executeTakeFirstOrThrow(),
    );
    expect(row.deposit_address).toBe(sandboxDepositAddress(created.body.id));
    const estimate = await merchant(sandbox, sandbox.demo.apiKey, "POST", "/public/v1/invoices/estimateFees", {
      currency: "EUR",
      amount: 10,
    });
    expect(estimate.status).toBe(200);
  });
});
