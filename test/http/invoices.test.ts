// CreateInvoice, EstimateFees, GetInvoice and GetInvoicesByOrderId through the real HTTP server.
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, expectInvoiceShape, INVOICE_KEYS, pay } from "../support/invoices.ts";
import { admin, call, createMerchant, expectProblem, merchant } from "../support/server.ts";

let m: { id: string; apiKey: string };
let other: { id: string; apiKey: string };

const server = useTestServer();
beforeAll(async () => {
  m = await createMerchant(server);
  other = await createMerchant(server);
});

const create = (apiKey: string, body: unknown) => merchant(server, apiKey, "POST", "/public/v1/invoices/create", body);
const estimate = (apiKey: string, body: unknown) =>
  merchant(server, apiKey, "POST", "/public/v1/invoices/estimateFees", body);
const createRaw = (apiKey: string, rawBody: string) =>
  call(server.baseUrl, "POST", "/public/v1/invoices/create", {
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    rawBody,
  });

describe("CreateInvoice", () => {
  it("answers an Invoice with exactly the interface's 24 properties and the documented defaults", async () => {
    const before = Date.now();
    const answer = await create(m.apiKey, { currency: "USDT", amount: "100.50" });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
    const invoice = answer.body;
    expectInvoiceShape(invoice);
    expect(INVOICE_KEYS).toHaveLength(24);
    expect(invoice).toMatchObject({
      status: "pending",
      type: "b2c",
      merchant_id: m.id,
      currency: "USDT",
      settlement_currency: "USDT",
      convert_currency: null,
      api_source: null,
      amount: "100.5",
      final_amount: "100.5",
      merchant_fee: "1.005",
      network_and_other_fees: "1",
      merchant_receive_amount: "98.495",
      paid_amount: "0",
      callback_url: null,
      success_url: null,
      return_url: null,
      fail_url: null,
      order_no: null,
      description: null,
    });
    expect(invoice.invoice_url).toBe(`${server.config.publicBaseUrl}/pay/${invoice.id}`);
    expect(invoice.created_at).toBe(invoice.updated_at);
    const created = Date.parse(invoice.created_at);
    expect(created).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(invoice.expires_at) - created).toBe(60 * 60 * 1000);
  });

  it("takes the amount as a JSON number or a string, read exactly", async () => {
    const cases: [unknown, string, string][] = [
      [100, "USDT", "100"],
      [0.1, "EUR", "0.1"],
      ["12.340000", "USDT", "12.34"],
      [19.99, "USD", "19.99"],
      ["1.000000000000000001", "ETH", "1.000000000000000001"],
      [123456789.123456, "USDT", "123456789.123456"],
    ];
    for (const [amount, currency, expected] of cases) {
      const answer = await create(m.apiKey, { currency, amount });
      expect(answer.status, JSON.stringify(amount)).toBe(200);
      expect(answer.body.amount).toBe(expected);
    }
  });

  it("stores every optional field, answering callbackUrl as callback_url", async () => {
    const body = {
      currency: "EUR",
      amount: 50,
      type: "b2b",
      order_no: "order-42",
      description: "Two widgets",
      callbackUrl: "https://merchant.example/callback",
      success_url: "https://merchant.example/success",
      return_url: "https://merchant.example/return",
      fail_url: "http://merchant.example/fail",
    };
    const invoice = (await create(m.apiKey, body)).body;
    expectInvoiceShape(invoice);
    expect(invoice).toMatchObject({
      type: "b2b",
      order_no: "order-42",
      description: "Two widgets",
      callback_url: "https://merchant.example/callback",
      success_url: "https://merchant.example/success",
      return_url: "https://merchant.example/return",
      fail_url: "http://merchant.example/fail",
      network_and_other_fees: "0",
      merchant_fee: "0.5",
      merchant_receive_amount: "49.5",
    });
    expect(invoice).not.toHaveProperty("callbackUrl");
  });

  it("settles in the autoconvert currency", async () => {
    const invoice = (await create(m.apiKey, { currency: "USDT", amount: 100, autoconvert: "EUR" })).body;
    expect(invoice).toMatchObject({ currency: "USDT", settlement_currency: "EUR", convert_currency: "EUR" });
    // Amounts stay in the invoice currency; conversion happens at settlement.
    expect(invoice.merchant_receive_amount).toBe("98");
  });

  it("applies the merchant's fee plan, rounding half up to the currency's decimals", async () => {
    const byMerchant = await createMerchant(server, { feePercent: "2.5" });
    const byPayer = await createMerchant(server, { feePercent: "2.5", feesPaidBy: "payer" });
    expect((await create(byMerchant.apiKey, { currency: "USDT", amount: "100" })).body).toMatchObject({
      final_amount: "100",
      merchant_fee: "2.5",
      network_and_other_fees: "1",
      merchant_receive_amount: "96.5",
    });
    expect((await create(byPayer.apiKey, { currency: "USDT", amount: "100" })).body).toMatchObject({
      amount: "100",
      final_amount: "103.5",
      merchant_fee: "2.5",
      network_and_other_fees: "1",
      merchant_receive_amount: "100",
    });
    const halfUp = await createMerchant(server, { feePercent: "1.5" });
    // 12.34 EUR x 1.5% = 0.1851 -> 0.19; 0.50 EUR x 1.5% = 0.0075 -> 0.01; 0.30 x 1.5% = 0.0045 -> 0.00.
    expect((await create(halfUp.apiKey, { currency: "EUR", amount: "12.34" })).body.merchant_fee).toBe("0.19");
    expect((await create(halfUp.apiKey, { currency: "EUR", amount: "0.5" })).body.merchant_fee).toBe("0.01");
    expect((await create(halfUp.apiKey, { currency: "EUR", amount: "0.3" })).body.merchant_fee).toBe("0");
  });

  it("refuses an invoice whose merchant_receive_amount would not be positive", async () => {
    // 1 USDT less 0.01 fee and 1 network fee leaves nothing.
    expectProblem(await create(m.apiKey, { currency: "USDT", amount: 1 }), 400, "merchant_receive_amount_not_positive");
    const all = await createMerchant(server, { feePercent: 100 });
    expectProblem(
      await create(all.apiKey, { currency: "EUR", amount: 5 }),
      400,
      "merchant_receive_amount_not_positive",
    );
    // Too small to be worth a cent after conversion.
    expectProblem(
      await create(m.apiKey, { currency: "ETH", amount: "0.000500000000000002", autoconvert: "EUR" }),
      400,
      "merchant_receive_amount_not_positive",
    );
  });

  it.each([
    ["1.1234567", "USDT", "amount_too_precise"],
    [0.001, "EUR", "amount_too_precise"],
    [1e-7, "USDT", "amount_too_precise"],
    ["0", "USDT", "amount_not_positive"],
    [0, "USDT", "amount_not_positive"],
    ["0.00", "EUR", "amount_not_positive"],
    ["-5", "USDT", "amount_negative"],
    [-5, "USDT", "amount_negative"],
    ["1e5", "USDT", "amount_exponent_not_allowed"],
    ["2.5E-1", "USDT", "amount_exponent_not_allowed"],
    ["abc", "USDT", "invalid_amount"],
    ["", "USDT", "validation_failed"],
    ["01", "USDT", "invalid_amount"],
    [".5", "USDT", "invalid_amount"],
    [" 5", "USDT", "invalid_amount"],
    ["5 USDT", "USDT", "invalid_amount"],
    [1e35, "USDT", "invalid_amount"],
    [true, "USDT", "validation_failed"],
    [null, "USDT", "validation_failed"],
    [[1], "USDT", "validation_failed"],
  ])("amount %j in %s is a 400 %s", async (amount, currency, code) => {
    const answer = await create(m.apiKey, { currency, amount });
    expectProblem(answer, 400, code);
    expect(answer.body.errors?.[0]?.pointer).toBe("/amount");
  });

  it("refuses an unknown currency or autoconvert ticker with its own code", async () => {
    const unknown = await create(m.apiKey, { currency: "DOGE", amount: 1 });
    expectProblem(unknown, 400, "unknown_currency");
    expect(unknown.body.errors).toEqual([{ pointer: "/currency", detail: "is not a catalog ticker" }]);
    const lower = await create(m.apiKey, { currency: "usdt", amount: 10 });
    expectProblem(lower, 400, "unknown_currency");
    const convert = await create(m.apiKey, { currency: "USDT", amount: 10, autoconvert: "XYZ" });
    expectProblem(convert, 400, "unknown_currency");
    expect(convert.body.errors).toEqual([{ pointer: "/autoconvert", detail: "is not a catalog ticker" }]);
  });

  it("rejects other properties, missing required fields, wrong types and enums", async () => {
    const extra = await create(m.apiKey, { currency: "USDT", amount: 10, callback_url: "https://x.example" });
    expectProblem(extra, 400, "validation_failed");
    expect(extra.body.errors).toContainEqual({ pointer: "/callback_url", detail: "is not an allowed property" });
    const missing = await create(m.apiKey, { amount: 10 });
    expectProblem(missing, 400, "validation_failed");
    expect(missing.body.errors).toContainEqual({ pointer: "/currency", detail: "is required" });
    expectProblem(await create(m.apiKey, { currency: "USDT" }), 400, "validation_failed");
    expectProblem(await create(m.apiKey, { currency: "USDT", amount: 10, type: "b2x" }), 400, "validation_failed");
    expectProblem(await create(m.apiKey, { currency: 5, amount: 10 }), 400, "validation_failed");
    expectProblem(await create(m.apiKey, { currency: "USDT", amount: 10, order_no: 7 }), 400, "validation_failed");
    expectProblem(
      await create(m.apiKey, { currency: "USDT", amount: 10, callbackUrl: "javascript:alert(1)" }),
      400,
      "validation_failed",
    );
    expectProblem(
      await create(m.apiKey, { currency: "USDT", amount: 10, success_url: "not a url" }),
      400,
      "validation_failed",
    );
    expectProblem(await create(m.apiKey, [{ currency: "USDT", amount: 10 }]), 400, "validation_failed");
    expectProblem(await createRaw(m.apiKey, '{"currency":"USDT","amount":10,'), 400, "malformed_json");
    expectProblem(
      await createRaw(m.apiKey, '{"currency":"USDT","amount":10,"amount":11}'),
      400,
      "duplicate_member_name",
    );
  });

  it("needs the API key", async () => {
    expectProblem(
      await call(server.baseUrl, "POST", "/public/v1/invoices/create", { body: { currency: "USDT", amount: 10 } }),
      401,
      "unauthorized",
    );
    expectProblem(await create("pk_nope", { currency: "USDT", amount: 10 }), 401, "invalid_api_key");
  });

  it("refuses a suspended merchant", async () => {
    const s = await createMerchant(server);
    expect((await admin(server, "PATCH", `/merchants/${s.id}`, { status: "suspended" })).status).toBe(200);
    expectProblem(await create(s.apiKey, { currency: "USDT", amount: 10 }), 400, "merchant_not_active");
  });
});

describe("expiresAt", () => {
  const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

  it("takes an RFC 3339 time with an offset and answers it in UTC with milliseconds", async () => {
    const at = new Date(Date.now() + 2 * 3600_000);
    at.setUTCMilliseconds(0);
    const local = new Date(at.getTime() + 2 * 3600_000).toISOString().replace("Z", "+02:00").replace(".000", "");
    const invoice = (await create(m.apiKey, { currency: "USDT", amount: 10, expiresAt: local })).body;
    expect(invoice.expires_at).toBe(at.toISOString());
    const lowerZ = (await create(m.apiKey, { currency: "USDT", amount: 10, expiresAt: inMs(60_000).toLowerCase() }))
      .status;
    expect(lowerZ).toBe(200);
  });

  it("allows up to 30 days ahead", async () => {
    const answer = await create(m.apiKey, { currency: "USDT", amount: 10, expiresAt: inMs(30 * 86400_000 - 60_000) });
    expect(answer.status).toBe(200);
  });

  it.each([
    ["no offset", () => new Date(Date.now() + 3600_000).toISOString().replace("Z", ""), "invalid_expires_at"],
    ["a date only", () => "2031-01-01", "invalid_expires_at"],
    ["an impossible date", () => "2031-02-30T00:00:00Z", "invalid_expires_at"],
    ["a number as text", () => String(Date.now() + 3600_000), "invalid_expires_at"],
    ["the past", () => new Date(Date.now() - 1000).toISOString(), "expires_at_not_future"],
    ["31 days ahead", () => new Date(Date.now() + 31 * 86400_000).toISOString(), "expires_at_too_far"],
  ])("refuses %s", async (_name, value, code) => {
    const answer = await create(m.apiKey, { currency: "USDT", amount: 10, expiresAt: value() });
    expectProblem(answer, 400, code);
    expect(answer.body.errors?.[0]?.pointer).toBe("/expiresAt");
  });

  it("must be a string", async () => {
    expectProblem(
      await create(m.apiKey, { currency: "USDT", amount: 10, expiresAt: Date.now() + 3600_000 }),
      400,
      "validation_failed",
    );
  });
});

describe("idempotencyKey", () => {
  it("returns the original invoice for the same key and an equal body", async () => {
    const body = { currency: "USDT", amount: 25, idempotencyKey: "same-1", order_no: "o-idem" };
    const first = await create(m.apiKey, body);
    expect(first.status).toBe(200);
    const again = await create(m.apiKey, body);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    // Equal after RFC 8785 canonicalization: other member order, number spelled differently.
    const reordered = await createRaw(
      m.apiKey,
      '{"order_no":"o-idem","idempotencyKey":"same-1","amount":2.5e1,"currency":"USDT"}',
    );
    expect(reordered.status).toBe(200);
    expect(reordered.body.id).toBe(first.body.id);
  });

  it("answers 409 with its own code for the same key and a different body", async () => {
    const first = await create(m.apiKey, { currency: "USDT", amount: 25, idempotencyKey: "diff-1" });
    expect(first.status).toBe(200);
    expectProblem(
      await create(m.apiKey, { currency: "USDT", amount: 26, idempotencyKey: "diff-1" }),
      409,
      "idempotency_key_reused",
    );
    // "25" (string) is not the body 25 (number).
    expectProblem(
      await create(m.apiKey, { currency: "USDT", amount: "25", idempotencyKey: "diff-1" }),
      409,
      "idempotency_key_reused",
    );
    expectProblem(
      await create(m.apiKey, { currency: "USDT", amount: 25, idempotencyKey: "diff-1", description: "x" }),
      409,
      "idempotency_key_reused",
    );
  });

  it("is scoped to the merchant", async () => {
    const body = { currency: "USDT", amount: 25, idempotencyKey: "scoped-1" };
    const mine = await create(m.apiKey, body);
    const theirs = await create(other.apiKey, body);
    expect(mine.status).toBe(200);
    expect(theirs.status).toBe(200);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(theirs.body.merchant_id).toBe(other.id);
  });

  it("replays the original even when its expiresAt has passed", async () => {
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const body = { currency: "USDT", amount: 25, idempotencyKey: "late-replay", expiresAt };
    const first = await create(m.apiKey, body);
    expect(first.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const again = await create(m.apiKey, body);
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(first.body.id);
  });

  it("creates exactly one invoice under many concurrent identical requests", async () => {
    const body = { currency: "USDT", amount: 42, idempotencyKey: "race-1", order_no: "race" };
    const answers = await Promise.all(Array.from({ length: 24 }, () => create(m.apiKey, body)));
    for (const a of answers) expect(a.status, a.text).toBe(200);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    const rows = await server.ctx.store.db
      .selectFrom("invoices")
      .select("id")
      .where("merchant_id", "=", m.id)
      .where("idempotency_key", "=", "race-1")
      .execute();
    expect(rows).toHaveLength(1);
  });

  it("lets exactly one of concurrent different bodies with one key win; the others get 409", async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        create(m.apiKey, { currency: "USDT", amount: 50 + i, idempotencyKey: "race-2" }),
      ),
    );
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) expectProblem(a, 409, "idempotency_key_reused");
    const rows = await server.ctx.store.db
      .selectFrom("invoices")
      .select("id")
      .where("merchant_id", "=", m.id)
      .where("idempotency_key", "=", "race-2")
      .execute();
    expect(rows.map((r) => r.id)).toEqual([ok[0]?.body.id]);
  });
});

describe("EstimateFees", () => {
  it("answers the fee estimate as JSON numbers, summaryFee being both fees", async () => {
    const answer = await estimate(m.apiKey, { currency: "USDT", amount: "100.5" });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      amount: 100.5,
      finalPrice: 100.5,
      fee: 1.005,
      summaryFee: 2.005,
      merchantReceiveAmount: 98.495,
    });
    // Values are JSON numbers, never strings.
    expect(answer.text).not.toMatch(/:\s*"/);
    expect(answer.text).toMatch(/"amount":100\.5/);
  });

  it("takes the optional fields of its body and rejects any other", async () => {
    const ok = await estimate(m.apiKey, {
      currency: "EUR",
      amount: 10,
      type: "b2b",
      order_no: "x",
      description: "y",
      autoconvert: "USDT",
    });
    expect(ok.status).toBe(200);
    expectProblem(
      await estimate(m.apiKey, { currency: "EUR", amount: 10, idempotencyKey: "k" }),
      400,
      "validation_failed",
    );
    expectProblem(
      await estimate(m.apiKey, { currency: "EUR", amount: 10, callbackUrl: "https://a.example" }),
      400,
      "validation_failed",
    );
    expectProblem(await estimate(m.apiKey, { currency: "EUR" }), 400, "validation_failed");
    expectProblem(await estimate(m.apiKey, { currency: "EUR", amount: 10, type: "c2c" }), 400, "validation_failed");
  });

  it("refuses what CreateInvoice refuses, with the same codes", async () => {
    expectProblem(await estimate(m.apiKey, { currency: "DOGE", amount: 10 }), 400, "unknown_currency");
    expectProblem(
      await estimate(m.apiKey, { currency: "USDT", amount: 10, autoconvert: "DOGE" }),
      400,
      "unknown_currency",
    );
    expectProblem(await estimate(m.apiKey, { currency: "EUR", amount: "1.001" }), 400, "amount_too_precise");
    expectProblem(await estimate(m.apiKey, { currency: "EUR", amount: -1 }), 400, "amount_negative");
    expectProblem(await estimate(m.apiKey, { currency: "EUR", amount: "1e2" }), 400, "amount_exponent_not_allowed");
    expectProblem(await estimate(m.apiKey, { currency: "EUR", amount: 0 }), 400, "amount_not_positive");
    expectProblem(
      await estimate(m.apiKey, { currency: "USDT", amount: 1 }),
      400,
      "merchant_receive_amount_not_positive",
    );
    expectProblem(
      await call(server.baseUrl, "POST", "/public/v1/invoices/estimateFees", { body: {} }),
      401,
      "unauthorized",
    );
  });

  it("agrees with the invoice created from the same fields, to the last digit", async () => {
    const plans = [
      await createMerchant(server, { feePercent: "1.75", feesPaidBy: "merchant" }),
      await createMerchant(server, { feePercent: "0.333", feesPaidBy: "payer" }),
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...plans),
        fc.constantFrom(
          { currency: "USDT", decimals: 6 },
          { currency: "EUR", decimals: 2 },
          { currency: "ETH", decimals: 18 },
        ),
        fc.bigInt({ min: 1n, max: 10n ** 14n }),
        fc.boolean(),
        async (plan, { currency, decimals }, minor, asNumber) => {
          const text = (Number(minor) / 10 ** decimals).toFixed(decimals).replace(/\.?0+$/, "");
          const amount = asNumber && text.replace(".", "").length <= 15 ? Number(text) : text;
          const e = await estimate(plan.apiKey, { currency, amount });
          const c = await create(plan.apiKey, { currency, amount });
          expect(c.status).toBe(e.status);
          if (e.status !== 200) {
            expect(c.body.code).toBe(e.body.code);
            return;
          }
          const invoice = c.body;
          expect(e.body.amount).toBe(Number(invoice.amount));
          expect(e.body.finalPrice).toBe(Number(invoice.final_amount));
          expect(e.body.fee).toBe(Number(invoice.merchant_fee));
          expect(e.body.merchantReceiveAmount).toBe(Number(invoice.merchant_receive_amount));
          // summaryFee = both fees, exactly: compare in minor units.
          const scale = 10 ** Math.min(decimals, 6);
          expect(Math.round(e.body.summaryFee * scale)).toBe(
            Math.round((Number(invoice.merchant_fee) + Number(invoice.network_and_other_fees)) * scale),
          );
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe("GetInvoice", () => {
  it("answers the merchant's invoice exactly as created", async () => {
    const created = await createInvoice(server, m.apiKey, { currency: "ETH", amount: "0.25", order_no: "get-1" });
    const answer = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${created.id}`);
    expect(answer.status).toBe(200);
    expectInvoiceShape(answer.body);
    expect(answer.body).toEqual(created);
  });

  it("answers the same bytes while the invoice is unchanged, and its new state once it changes", async () => {
    const created = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "12.5" });
    const path = `/public/v1/invoices/${created.id}`;
    const first = await merchant(server, m.apiKey, "GET", path);
    const second = await merchant(server, m.apiKey, "GET", path);
    expect(second.text).toBe(first.text);
    expect(second.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(first.body).toEqual(created);

    expect((await pay(server, m.apiKey, created.id, { amount: "12.5" })).status).toBe(200);
    const paid = await merchant(server, m.apiKey, "GET", path);
    expect(paid.body).toMatchObject({ id: created.id, status: "completed", paid_amount: "12.5" });
    expect((await merchant(server, m.apiKey, "GET", path)).text).toBe(paid.text);
  });

  it("answers 404 for another merchant's invoice exactly as for an unknown id", async () => {
    const created = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const foreign = await merchant(server, other.apiKey, "GET", `/public/v1/invoices/${created.id}`);
    const unknown = await merchant(
      server,
      other.apiKey,
      "GET",
      "/public/v1/invoices/00000000-0000-4000-8000-000000000000",
    );
    expectProblem(foreign, 404, "invoice_not_found");
    expectProblem(unknown, 404, "invoice_not_found");
    expect(foreign.body.detail).toBe(unknown.body.detail);
    expectProblem(await merchant(server, m.apiKey, "GET", "/public/v1/invoices/not-an-id"), 404, "invoice_not_found");
    expectProblem(await call(server.baseUrl, "GET", `/public/v1/invoices/${created.id}`), 401, "unauthorized");
  });
});

describe("GetInvoicesByOrderId", () => {
  it("lists the merchant's invoices with that order_no, newest first", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 + i, order_no: "ord-list" })).id);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await createInvoice(server, other.apiKey, { currency: "USDT", amount: 10, order_no: "ord-list" });
    await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10, order_no: "ord-other" });
    const answer = await merchant(server, m.apiKey, "GET", "/public/v1/invoices/byOrder/ord-list");
    expect(answer.status).toBe(200);
    expect(answer.body.map((i: { id: string }) => i.id)).toEqual([...ids].reverse());
    for (const invoice of answer.body) {
      expectInvoiceShape(invoice);
      expect(invoice.order_no).toBe("ord-list");
      expect(invoice.merchant_id).toBe(m.id);
    }
  });

  it("orders by created_at then id, both descending, when creation times tie", async () => {
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        createInvoice(server, m.apiKey, { currency: "EUR", amount: 5 + i, order_no: "ord-tie" }),
      ),
    );
    const now = new Date().toISOString();
    // Force ties: every invoice of the order at one instant.
    await server.ctx.store.transaction((tx) =>
      tx.db.updateTable("invoices").set({ created_at: now }).where("order_no", "=", "ord-tie").execute(),
    );
    const listed = (await merchant(server, m.apiKey, "GET", "/public/v1/invoices/byOrder/ord-tie")).body as {
      id: string;
    }[];
    expect(listed).toHaveLength(8);
    expect(listed.map((i) => i.id)).toEqual(
      listed
        .map((i) => i.id)
        .sort()
        .reverse(),
    );
  });

  it("answers [] for an unknown order_no and decodes the path parameter", async () => {
    const none = await merchant(server, m.apiKey, "GET", "/public/v1/invoices/byOrder/no-such-order");
    expect(none.status).toBe(200);
    expect(none.body).toEqual([]);
    const odd = "Order #7/ä ?&";
    const created = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10, order_no: odd });
    const found = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/byOrder/${encodeURIComponent(odd)}`);
    expect(found.body.map((i: { id: string }) => i.id)).toEqual([created.id]);
    expectProblem(await call(server.baseUrl, "GET", "/public/v1/invoices/byOrder/x"), 401, "unauthorized");
  });
});

describe("OpenAPI", () => {
  it("documents the four operations with closed schemas", async () => {
    const doc = (await call(server.baseUrl, "GET", "/openapi.json")).body;
    const op = (path: string, method: string) => doc.paths[path]?.[method];
    expect(op("/public/v1/invoices/create", "post")?.operationId).toBe("CreateInvoice");
    expect(op("/public/v1/invoices/estimateFees", "post")?.operationId).toBe("EstimateFees");
    expect(op("/public/v1/invoices/{id}", "get")?.operationId).toBe("GetInvoice");
    expect(op("/public/v1/invoices/byOrder/{order_no}", "get")?.operationId).toBe("GetInvoicesByOrderId");
    const invoiceSchema = op("/public/v1/invoices/{id}", "get").responses["200"].content["application/json"].schema;
    expect(invoiceSchema.additionalProperties).toBe(false);
    expect(Object.keys(invoiceSchema.properties).sort()).toEqual(INVOICE_KEYS);
    expect([...invoiceSchema.required].sort()).toEqual(INVOICE_KEYS);
    const createBody = op("/public/v1/invoices/create", "post").requestBody.content["application/json"].schema;
    expect(createBody.additionalProperties).toBe(false);
    expect(Object.keys(createBody.properties).sort()).toEqual(
      [
        "currency",
        "amount",
        "idempotencyKey",
        "type",
        "order_no",
        "description",
        "autoconvert",
        "callbackUrl",
        "success_url",
        "return_url",
        "fail_url",
        "expiresAt",
      ].sort(),
    );
    expect([...createBody.required].sort()).toEqual(["amount", "currency"]);
    const estimateAnswer = op("/public/v1/invoices/estimateFees", "post").responses["200"].content["application/json"]
      .schema;
    expect(estimateAnswer.additionalProperties).toBe(false);
    expect([...estimateAnswer.required].sort()).toEqual(["amount", "fee", "finalPrice", "merchantReceiveAmount"]);
  });
});
