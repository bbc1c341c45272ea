// Errors and limits of product §8: problem details with stable codes, 404/413/415/429, strict bodies, no 500.
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { admin, call, createMerchant, expectProblem, merchant, startTestServer } from "../support/server.ts";

const server = useTestServer();
const limited = useTestServer({ env: { RATE_LIMIT_PER_MINUTE: "3" } });

const adminHeaders = () => ({ authorization: `Bearer ${server.adminToken}` });

describe("unknown routes and methods", () => {
  it("answers 404 problem details for an unknown route", async () => {
    expectProblem(await call(server.baseUrl, "GET", "/public/v1/nope"), 404, "not_found");
    expectProblem(await call(server.baseUrl, "GET", "/"), 404, "not_found");
    expectProblem(await call(server.baseUrl, "DELETE", "/public/v1/version"), 404, "not_found");
  });

  it("has no sandbox routes in live mode", async () => {
    const live = await startTestServer({ env: { SERVICE_MODE: "live" } });
    try {
      expect(live.demo.apiKey).toBe("");
      expectProblem(
        await call(live.baseUrl, "POST", "/sandbox/v1/invoices/x/payments", { body: {} }),
        404,
        "not_found",
      );
    } finally {
      await live.close();
    }
  });
});

describe("bodies", () => {
  it("answers 413 for a body over 64 KiB", async () => {
    const answer = await call(server.baseUrl, "POST", "/admin/v1/merchants", {
      headers: { ...adminHeaders(), "content-type": "application/json" },
      rawBody: JSON.stringify({ email: "a@example.com", merchantName: "x".repeat(70 * 1024) }),
    });
    expectProblem(answer, 413, "payload_too_large");
  });

  it("answers 415 for a non-JSON content type", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
      const answer = await call(server.baseUrl, "POST", "/admin/v1/merchants", {
        headers: { ...adminHeaders(), "content-type": type },
        rawBody: "email=a@example.com",
      });
      expectProblem(answer, 415, "unsupported_media_type");
    }
  });

  it("accepts application/json with a charset", async () => {
    const answer = await call(server.baseUrl, "POST", "/admin/v1/merchants", {
      headers: { ...adminHeaders(), "content-type": "application/json; charset=utf-8" },
      rawBody: JSON.stringify({ email: "charset@example.com" }),
    });
    expect(answer.status).toBe(200);
  });

  it.each([
    ["{", "malformed_json"],
    ["{} {}", "malformed_json"],
    ["[1,]", "malformed_json"],
    ["nul", "malformed_json"],
    ['{"email":"a@example.com","email":"b@example.com"}', "duplicate_member_name"],
    ['{"a":{"b":1,"b":2}}', "duplicate_member_name"],
    ['{"n":1e400}', "malformed_json"],
  ])("answers 400 for the body %s", async (raw, code) => {
    const answer = await call(server.baseUrl, "POST", "/admin/v1/merchants", {
      headers: { ...adminHeaders(), "content-type": "application/json" },
      rawBody: raw,
    });
    expectProblem(answer, 400, code);
  });

  it("does not coerce types or strip unknown properties", async () => {
    const m = await createMerchant(server);
    expectProblem(
      await admin(server, "PATCH", `/merchants/${m.id}`, { whitelabeling: "true" }),
      400,
      "validation_failed",
    );
    expectProblem(await admin(server, "PATCH", `/merchants/${m.id}`, { whitelabeling: 1 }), 400, "validation_failed");
    expectProblem(
      await admin(server, "PATCH", `/merchants/${m.id}`, { merchantName: "ok", unknown: "x" }),
      400,
      "validation_failed",
    );
    const unchanged = await admin(server, "GET", `/merchants/${m.id}`);
    expect(unchanged.body.merchantName).toBeNull();
    expect(unchanged.body.whitelabeling).toBe(false);
  });

  it("never answers 500 to hostile input", async () => {
    const bodies = [
      '"just a string"',
      "null",
      "[]",
      "12",
      '{"email":"\\ud800@example.com"}',
      '{"email":"a\\u0000@example.com"}',
      `{"email":${"[".repeat(5000)}${"]".repeat(5000)}}`,
      '{"__proto__":{"admin":true},"email":"p@example.com"}',
      '{"constructor":{"prototype":{"x":1}},"email":"c@example.com"}',
    ];
    for (const raw of bodies) {
      const answer = await call(server.baseUrl, "POST", "/admin/v1/merchants", {
        headers: { ...adminHeaders(), "content-type": "application/json" },
        rawBody: raw,
      });
      expect(answer.status, raw.slice(0, 60)).toBeLessThan(500);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    }
  });

  it("treats repeated x-api-key headers as no key", async () => {
    const m = await createMerchant(server);
    const response = await fetch(`${server.baseUrl}/public/v1/me`, {
      headers: [
        ["x-api-key", m.apiKey],
        ["x-api-key", m.apiKey],
      ],
    });
    expect(response.status).toBe(401);
  });
});

describe("rate limit", () => {
  it("answers 429 with Retry-After once an API key exceeds RATE_LIMIT_PER_MINUTE, per key", async () => {
    const a = await createMerchant(limited);
    const b = await createMerchant(limited);
    for (let i = 0; i < 3; i++) expect((await merchant(limited, a.apiKey, "GET", "/public/v1/me")).status).toBe(200);
    const refused = await merchant(limited, a.apiKey, "GET", "/public/v1/me");
    expectProblem(refused, 429, "rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await merchant(limited, b.apiKey, "GET", "/public/v1/me")).status).toBe(200);
  });

  it("checks the API key before the rate limit: an unknown key is 401, not 429", async () => {
    for (let i = 0; i < 5; i++) {
      expectProblem(await merchant(limited, "pk_unknown", "GET", "/public/v1/me"), 401, "invalid_api_key");
    }
  });

  it("does not limit the reference endpoints", async () => {
    for (let i = 0; i < 6; i++) expect((await call(limited.baseUrl, "GET", "/public/v1/version")).status).toBe(200);
  });
});
