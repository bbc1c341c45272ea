// Reference endpoints and Me: exact property sets, no credentials where none are needed.
import countries from "i18n-iso-countries";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { admin, call, createMerchant, expectProblem, merchant } from "../support/server.ts";

const server = useTestServer();

const CURRENCY_KEYS = [
  "authorization",
  "contractAddress",
  "fullName",
  "icon",
  "iconDark",
  "internalTicker",
  "network",
  "ticker",
  "type",
];

describe("GetVersion", () => {
  it("answers a JSON string without credentials", async () => {
    const answer = await call(server.baseUrl, "GET", "/public/v1/version");
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
    expect(answer.text).toBe('"1.0.0"');
  });
});

describe("Currencies", () => {
  it("lists the catalog of product §3 as exact CurrencyInfo objects", async () => {
    const answer = await call<Record<string, unknown>[]>(server.baseUrl, "GET", "/public/v1/currencies");
    expect(answer.status).toBe(200);
    const tickers = answer.body.map((c) => c.ticker);
    expect(tickers).toEqual(expect.arrayContaining(["USDT", "USDC", "ETH", "EUR", "USD"]));
    expect(new Set(tickers).size).toBe(tickers.length);
    for (const currency of answer.body) {
      expect(Object.keys(currency).sort()).toEqual(CURRENCY_KEYS);
      expect(["stablecoin", "fiat", "token"]).toContain(currency.type);
      for (const key of CURRENCY_KEYS.filter((k) => k !== "contractAddress" && k !== "authorization"))
        expect(typeof currency[key]).toBe("string");
      expect(currency.contractAddress === null || typeof currency.contractAddress === "string").toBe(true);
    }
    const byTicker = Object.fromEntries(answer.body.map((c) => [c.ticker, c]));
    expect(byTicker.USDT?.type).toBe("stablecoin");
    expect(byTicker.ETH?.type).toBe("token");
    expect(byTicker.EUR?.type).toBe("fiat");
    expect(byTicker.ETH?.contractAddress).toBeNull();
    // Paying by signature (product §28): USDC by EIP-3009 with its domain, USDT through Permit2.
    expect(byTicker.USDC?.authorization).toEqual({ kind: "eip3009", name: "USD Coin", version: "2" });
    expect(byTicker.USDT?.authorization).toEqual({ kind: "permit2" });
    expect(byTicker.ETH?.authorization).toBeNull();
  });

  it("serves the icons the catalog points at", async () => {
    const currencies = await call<{ icon: string; iconDark: string }[]>(server.baseUrl, "GET", "/public/v1/currencies");
    for (const url of [currencies.body[0]?.icon, currencies.body[0]?.iconDark]) {
      const icon = await fetch(url ?? "");
      expect(icon.status).toBe(200);
      expect(icon.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
    }
  });
});

describe("Countries", () => {
  it("lists every ISO 3166-1 country as {code, name}", async () => {
    const answer = await call<{ code: string; name: string }[]>(server.baseUrl, "GET", "/public/v1/countries");
    expect(answer.status).toBe(200);
    expect(answer.body.length).toBe(Object.keys(countries.getAlpha2Codes()).length);
    expect(answer.body.length).toBeGreaterThanOrEqual(249);
    for (const country of answer.body) {
      expect(Object.keys(country).sort()).toEqual(["code", "name"]);
      expect(country.code).toMatch(/^[A-Z]{2}$/);
      expect(country.name.length).toBeGreaterThan(0);
    }
    expect(answer.body.find((c) => c.code === "DE")?.name).toBe("Germany");
  });
});

describe("Me", () => {
  it("answers PublicMerchantInfo exactly, nullable fields present as null", async () => {
    const m = await createMerchant(server);
    const answer = await merchant(server, m.apiKey, "GET", "/public/v1/me");
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      id: m.id,
      email: expect.stringMatching(/@example\.com$/),
      merchantName: null,
      directorName: null,
      website: null,
      logo: null,
      whitelabeling: false,
    });
    expect(Object.keys(answer.body).sort()).toEqual(
      ["directorName", "email", "id", "logo", "merchantName", "website", "whitelabeling"].sort(),
    );
  });

  it("answers 401 for a missing, unknown or revoked key", async () => {
    expectProblem(await call(server.baseUrl, "GET", "/public/v1/me"), 401, "unauthorized");
    expectProblem(await merchant(server, "pk_unknown", "GET", "/public/v1/me"), 401, "invalid_api_key");
    expectProblem(await merchant(server, `pk_${"0".repeat(300)}`, "GET", "/public/v1/me"), 401, "invalid_api_key");
    const m = await createMerchant(server);
    // Used first, so that a process with a read cache holds the key when it is revoked.
    expect((await merchant(server, m.apiKey, "GET", "/public/v1/me")).status).toBe(200);
    expect((await merchant(server, m.apiKey, "GET", "/public/v1/me")).status).toBe(200);
    expect((await admin(server, "POST", "/api-keys/revoke", { apiKey: m.apiKey })).status).toBe(200);
    expectProblem(await merchant(server, m.apiKey, "GET", "/public/v1/me"), 401, "invalid_api_key");
  });

  it("works with the demo merchant created on first start", async () => {
    const answer = await merchant(server, server.demo.apiKey, "GET", "/public/v1/me");
    expect(answer.status).toBe(200);
    expect(answer.body.id).toBe(server.demo.merchantId);
  });
});
