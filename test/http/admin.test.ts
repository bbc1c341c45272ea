// Operator API (product §9): bearer auth, merchants, API keys, withdrawal methods, balances, limits.
import { describe, expect, it } from "vitest";
import { hashToken } from "../../src/store/secrets.ts";
import { useTestServer } from "../support/fixture.ts";
import { admin, call, createMerchant, expectProblem, merchant } from "../support/server.ts";

const server = useTestServer();

const MERCHANT_KEYS = [
  "directorName",
  "email",
  "feePercent",
  "feesPaidBy",
  "id",
  "logo",
  "merchantName",
  "status",
  "website",
  "whitelabeling",
];

describe("operator authentication", () => {
  it("answers 401 without, or with a wrong, bearer token", async () => {
    expectProblem(await call(server.baseUrl, "GET", "/admin/v1/currencies"), 401, "invalid_admin_token");
    expectProblem(
      await call(server.baseUrl, "GET", "/admin/v1/currencies", { headers: { authorization: "Bearer nope" } }),
      401,
      "invalid_admin_token",
    );
    expectProblem(
      await call(server.baseUrl, "GET", "/admin/v1/currencies", { headers: { authorization: server.adminToken } }),
      401,
      "invalid_admin_token",
    );
    expect((await admin(server, "GET", "/currencies")).status).toBe(200);
  });

  it("does not accept a merchant API key", async () => {
    expectProblem(
      await call(server.baseUrl, "GET", "/admin/v1/currencies", { headers: { "x-api-key": server.demo.apiKey } }),
      401,
      "invalid_admin_token",
    );
  });
});

describe("merchants", () => {
  it("creates a merchant with defaults and reads it back", async () => {
    const created = await admin(server, "POST", "/merchants", { email: "shop@example.com", merchantName: "Shop" });
    expect(created.status).toBe(200);
    expect(Object.keys(created.body).sort()).toEqual(MERCHANT_KEYS);
    expect(created.body).toMatchObject({
      email: "shop@example.com",
      merchantName: "Shop",
      directorName: null,
      website: null,
      logo: null,
      whitelabeling: false,
      status: "active",
      feePercent: "1",
      feesPaidBy: "merchant",
    });
    const read = await admin(server, "GET", `/merchants/${created.body.id}`);
    expect(read.body).toEqual(created.body);
  });

  it("updates profile, fee plan and status, and clears nullable fields with null", async () => {
    const m = await createMerchant(server, { website: "https://shop.example" });
    const patched = await admin(server, "PATCH", `/merchants/${m.id}`, {
      feePercent: 2.5,
      feesPaidBy: "payer",
      status: "suspended",
      website: null,
      whitelabeling: true,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      feePercent: "2.5",
      feesPaidBy: "payer",
      status: "suspended",
      website: null,
      whitelabeling: true,
    });
    const me = await merchant(server, m.apiKey, "GET", "/public/v1/me");
    expect(me.body.whitelabeling).toBe(true);
    expect(me.body.website).toBeNull();
    expect((await admin(server, "PATCH", `/merchants/${m.id}`, { feePercent: "0.75" })).body.feePercent).toBe("0.75");
  });

  it.each([
    [{}, "validation_failed"],
    [{ email: "not-an-email" }, "validation_failed"],
    [{ email: "a@example.com", extra: 1 }, "validation_failed"],
    [{ email: "a@example.com", whitelabeling: "true" }, "validation_failed"],
    [{ email: "a@example.com", feePercent: 101 }, "validation_failed"],
    [{ email: "a@example.com", feePercent: "100.5" }, "invalid_fee_percent"],
    [{ email: "a@example.com", feePercent: "-1" }, "validation_failed"],
    [{ email: "a@example.com", feesPaidBy: "nobody" }, "validation_failed"],
  ])("refuses %j with 400 %s and creates nothing", async (body, code) => {
    const before = await server.ctx.store.db.selectFrom("merchants").select("id").execute();
    const answer = await admin(server, "POST", "/merchants", body);
    expectProblem(answer, 400, code);
    const after = await server.ctx.store.db.selectFrom("merchants").select("id").execute();
    expect(after.length).toBe(before.length);
  });

  it("lists each failing field of a bad body", async () => {
    const answer = await admin(server, "POST", "/merchants", { email: 5, feesPaidBy: "x", other: true });
    expectProblem(answer, 400, "validation_failed");
    const pointers = (answer.body.errors as { pointer: string }[]).map((e) => e.pointer);
    expect(pointers).toEqual(expect.arrayContaining(["/email", "/feesPaidBy", "/other"]));
  });

  it("refuses a second merchant with the same email (409) and an empty patch (400)", async () => {
    await admin(server, "POST", "/merchants", { email: "twice@example.com" });
    expectProblem(await admin(server, "POST", "/merchants", { email: "twice@example.com" }), 409, "email_taken");
    const m = await createMerchant(server);
    expectProblem(
      await admin(server, "PATCH", `/merchants/${m.id}`, { email: "twice@example.com" }),
      409,
      "email_taken",
    );
    expectProblem(await admin(server, "PATCH", `/merchants/${m.id}`, {}), 400, "validation_failed");
  });

  it("answers 404 for an unknown merchant", async () => {
    expectProblem(await admin(server, "GET", "/merchants/nope"), 404, "merchant_not_found");
    expectProblem(await admin(server, "PATCH", "/merchants/nope", { status: "active" }), 404, "merchant_not_found");
    expectProblem(await admin(server, "POST", "/merchants/nope/api-keys", {}), 404, "merchant_not_found");
    expectProblem(await admin(server, "GET", "/merchants/nope/balances"), 404, "merchant_not_found");
  });
});

describe("callback secret", () => {
  it("reads and rotates the whsec_ secret, keeping the previous one sealed for the rotation window", async () => {
    const m = await createMerchant(server);
    const first = await admin(server, "GET", `/merchants/${m.id}/callback-secret`);
    expect(first.status).toBe(200);
    expect(first.body.callbackSecret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    const rotated = await admin(server, "POST", `/merchants/${m.id}/callback-secret/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.callbackSecret).not.toBe(first.body.callbackSecret);
    expect((await admin(server, "GET", `/merchants/${m.id}/callback-secret`)).body).toEqual(rotated.body);
    const row = await server.ctx.store.db
      .selectFrom("merchants")
      .selectAll()
      .where("id", "=", m.id)
      .executeTakeFirstOrThrow();
    expect(row.callback_secret).not.toContain(rotated.body.callbackSecret);
    expect(row.callback_secret_previous).not.toBeNull();
    expect(row.callback_secret_previous).not.toContain(first.body.callbackSecret);
    expect(row.callback_secret_rotated_at).not.toBeNull();
  });
});

describe("API keys", () => {
  it("stores keys only as hashes and secrets only sealed", async () => {
    const m = await createMerchant(server);
    const rows = await server.ctx.store.db.selectFrom("api_keys").selectAll().where("merchant_id", "=", m.id).execute();
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.key_hash).toBe(hashToken(m.apiKey));
    expect(row.key_hash).not.toContain(m.apiKey);
    expect(m.secretKey).toMatch(/^[0-9a-f]{64}$/);
    expect(row.secret_encrypted).toMatch(/^v1\./);
    expect(row.secret_encrypted).not.toContain(m.secretKey);
    expect(Buffer.from(row.secret_encrypted!.split(".")[3]!, "base64url").toString("hex")).not.toContain(m.secretKey);
    expect(JSON.stringify(row)).not.toContain(m.apiKey);
  });

  it("issues a legacy key without a secret, which still reads", async () => {
    const m = await createMerchant(server);
    const legacy = await admin(server, "POST", `/merchants/${m.id}/api-keys`, { legacy: true });
    expect(legacy.status).toBe(200);
    expect(Object.keys(legacy.body).sort()).toEqual(["apiKey", "secretKey"]);
    expect(legacy.body.secretKey).toBeNull();
    expect((await merchant(server, legacy.body.apiKey, "GET", "/public/v1/me")).status).toBe(200);
  });

  it("issues a key with no body at all", async () => {
    const m = await createMerchant(server);
    const issued = await call(server.baseUrl, "POST", `/admin/v1/merchants/${m.id}/api-keys`, {
      headers: { authorization: `Bearer ${server.adminToken}` },
    });
    expect(issued.status).toBe(200);
    expect(issued.body.secretKey).toMatch(/^[0-9a-f]{64}$/);
  });

  it("revokes a key once; the revoked key gets 401 and other keys keep working", async () => {
    const m = await createMerchant(server);
    const second = await admin(server, "POST", `/merchants/${m.id}/api-keys`, {});
    expect(await admin(server, "POST", "/api-keys/revoke", { apiKey: m.apiKey })).toMatchObject({
      status: 200,
      body: { revoked: true },
    });
    expectProblem(await admin(server, "POST", "/api-keys/revoke", { apiKey: m.apiKey }), 404, "api_key_not_found");
    expectProblem(await merchant(server, m.apiKey, "GET", "/public/v1/me"), 401, "invalid_api_key");
    expect((await merchant(server, second.body.apiKey, "GET", "/public/v1/me")).status).toBe(200);
  });
});

describe("withdrawal methods", () => {
  it("creates methods with integer ids and lists them", async () => {
    const m = await createMerchant(server);
    const a = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
      currency: "USDT",
      address: "0xabc",
    });
    const b = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
      currency: "EUR",
      address: "DE89370400440532013000",
      label: "Main account",
    });
    expect(a.status).toBe(200);
    expect(Number.isInteger(a.body.id)).toBe(true);
    expect(b.body.id).toBeGreaterThan(a.body.id);
    expect(a.body).toMatchObject({ merchantId: m.id, currency: "USDT", address: "0xabc", label: null });
    const list = await admin(server, "GET", `/merchants/${m.id}/withdrawal-methods`);
    expect(list.body.map((x: { id: number }) => x.id)).toEqual([a.body.id, b.body.id]);
  });

  it("refuses an unknown currency", async () => {
    const m = await createMerchant(server);
    expectProblem(
      await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, { currency: "DOGE", address: "x" }),
      400,
      "unknown_currency",
    );
  });
});

describe("balances and adjustments", () => {
  it("starts every catalog currency at 0 and moves balances through adjustments", async () => {
    const m = await createMerchant(server);
    const start = await admin(server, "GET", `/merchants/${m.id}/balances`);
    expect(start.status).toBe(200);
    for (const b of start.body) {
      expect(Object.keys(b).sort()).toEqual(["available", "currency", "internalTicker", "network"]);
      expect(b.available).toBe("0");
    }
    const credited = await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "USDT",
      amount: "100.50",
      memo: "opening balance",
    });
    expect(credited.status).toBe(200);
    expect(credited.body.find((b: { currency: string }) => b.currency === "USDT").available).toBe("100.5");
    const debited = await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "USDT",
      amount: "-0.5",
      memo: "correction",
    });
    expect(debited.body.find((b: { currency: string }) => b.currency === "USDT").available).toBe("100");
    const eth = await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "ETH",
      amount: "0.000000000000000001",
      memo: "dust",
    });
    expect(eth.body.find((b: { currency: string }) => b.currency === "ETH").available).toBe("0.000000000000000001");
  });

  it("refuses a debit beyond the available balance, and changes nothing", async () => {
    const m = await createMerchant(server);
    await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "EUR",
      amount: "10",
      memo: "in",
    });
    const movementsBefore = await server.ctx.store.db.selectFrom("ledger_movements").select("id").execute();
    expectProblem(
      await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
        currency: "EUR",
        amount: "-10.01",
        memo: "x",
      }),
      400,
      "insufficient_balance",
    );
    const movementsAfter = await server.ctx.store.db.selectFrom("ledger_movements").select("id").execute();
    expect(movementsAfter.length).toBe(movementsBefore.length);
    const balances = await admin(server, "GET", `/merchants/${m.id}/balances`);
    expect(balances.body.find((b: { currency: string }) => b.currency === "EUR").available).toBe("10");
  });

  it.each([
    [{ currency: "EUR", amount: "0", memo: "x" }, 400, "amount_not_positive"],
    [{ currency: "EUR", amount: "1.001", memo: "x" }, 400, "amount_too_precise"],
    [{ currency: "EUR", amount: "1e3", memo: "x" }, 400, "invalid_amount"],
    [{ currency: "EUR", amount: 5, memo: "x" }, 400, "validation_failed"],
    [{ currency: "EUR", amount: "5" }, 400, "validation_failed"],
    [{ currency: "XYZ", amount: "5", memo: "x" }, 400, "unknown_currency"],
  ])("refuses %j", async (body, status, code) => {
    const m = await createMerchant(server);
    expectProblem(await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, body), status, code);
  });

  it("answers each refusal with its detail and the field it is about, and no merchant with a 404", async () => {
    const m = await createMerchant(server);
    const adjust = (id: string, body: object) => admin(server, "POST", `/merchants/${id}/balance-adjustments`, body);
    const refusal = async (id: string, body: object) => {
      const { status, code, detail, errors } = (await adjust(id, body)).body;
      return { status, code, detail, errors };
    };
    expect(await refusal("nope", { currency: "EUR", amount: "1", memo: "x" })).toEqual({
      status: 404,
      code: "merchant_not_found",
      detail: "No merchant with this id.",
      errors: undefined,
    });
    expect(await refusal(m.id, { currency: "XYZ", amount: "1", memo: "x" })).toEqual({
      status: 400,
      code: "unknown_currency",
      detail: "Unknown currency XYZ.",
      errors: [{ pointer: "/currency", detail: "is not a catalog ticker" }],
    });
    expect(await refusal(m.id, { currency: "EUR", amount: "1.001", memo: "x" })).toEqual({
      status: 400,
      code: "amount_too_precise",
      detail: "amount must be a non-zero decimal with at most 2 fraction digits.",
      errors: [{ pointer: "/amount", detail: "is not a valid adjustment" }],
    });
    expect(await refusal(m.id, { currency: "EUR", amount: "-1", memo: "x" })).toEqual({
      status: 400,
      code: "insufficient_balance",
      detail: "The EUR balance does not cover this adjustment.",
      errors: undefined,
    });
  });

  it("records every adjustment as a balanced ledger movement naming its cause and memo", async () => {
    const m = await createMerchant(server);
    await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "USD",
      amount: "42",
      memo: "goodwill",
    });
    const entries = await server.ctx.store.db
      .selectFrom("ledger_entries")
      .innerJoin("ledger_movements", "ledger_movements.id", "ledger_entries.movement_id")
      .select(["ledger_entries.account", "ledger_entries.amount", "ledger_movements.cause", "ledger_movements.memo"])
      .where("ledger_movements.memo", "=", "goodwill")
      .execute();
    expect(entries).toHaveLength(2);
    expect(entries.every((e) => e.cause === "adjustment")).toBe(true);
    expect(entries.map((e) => BigInt(e.amount)).reduce((a, b) => a + b, 0n)).toBe(0n);
    expect(entries.find((e) => e.account === `merchant:${m.id}`)?.amount).toBe("4200");
  });
});

describe("currency limits", () => {
  it("sets withdrawal limits and answers the currency configuration", async () => {
    const answer = await admin(server, "PUT", "/currencies/USDC/limits", {
      withdrawalMin: "20",
      withdrawalMax: "5000.5",
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      ticker: "USDC",
      type: "stablecoin",
      decimals: 6,
      networkFee: "1",
      withdrawalMin: "20",
      withdrawalMax: "5000.5",
      rateUsd: "1",
      rateSource: { kind: "static" },
      authorization: { kind: "eip3009", name: "USD Coin", version: "2" },
      lastRate: { rateUsd: "1", source: "static", updatedAt: null, readAt: null },
    });
    const list = await admin(server, "GET", "/currencies");
    expect(list.body.find((c: { ticker: string }) => c.ticker === "USDC").withdrawalMin).toBe("20");
  });

  it("refuses min above max, too many decimals, and unknown tickers", async () => {
    expectProblem(
      await admin(server, "PUT", "/currencies/EUR/limits", { withdrawalMin: "10", withdrawalMax: "5" }),
      400,
      "invalid_limits",
    );
    expectProblem(
      await admin(server, "PUT", "/currencies/EUR/limits", { withdrawalMin: "1.001", withdrawalMax: "5" }),
      400,
      "invalid_limits",
    );
    expectProblem(
      await admin(server, "PUT", "/currencies/EUR/limits", { withdrawalMin: "1", withdrawalMax: 5 }),
      400,
      "validation_failed",
    );
    expectProblem(
      await admin(server, "PUT", "/currencies/NOPE/limits", { withdrawalMin: "1", withdrawalMax: "5" }),
      404,
      "currency_not_found",
    );
  });
});
