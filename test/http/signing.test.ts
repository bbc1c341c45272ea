// Request signing of CreateWithdrawal, case by case, and the check order of product §8.
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { admin, expectProblem, startTestServer } from "../support/server.ts";
import {
  jcs,
  nowSeconds,
  rawCall,
  signatureHeader,
  signedCall,
  signingMessage,
  WITHDRAWALS_PATH,
} from "../support/signing.ts";
import { expectLedgerBalanced, type FundedMerchant, fundedMerchant, withdraw } from "../support/withdrawals.ts";

let m: FundedMerchant;
const server = useTestServer();
beforeAll(async () => {
  m = await fundedMerchant(server, "1000");
});

/** A well-formed signature that is not the right one. */
const WRONG_SIGNATURE = `v1=${"ab".repeat(32)}`;

async function legacyKey(merchantId: string): Promise<string> {
  const issued = await admin(server, "POST", `/merchants/${merchantId}/api-keys`, { legacy: true });
  expect(issued.body.secretKey).toBeNull();
  return issued.body.apiKey;
}

describe("a correctly signed request", () => {
  it("is accepted, with the secret used as UTF-8 text", async () => {
    const { answer, requestId } = await withdraw(server, m);
    expect(answer.status).toBe(200);
    expect(answer.body.request.id).toBe(requestId);
  });

  it("accepts timestamps up to five minutes either side", async () => {
    for (const offset of [-290, 290]) {
      const { answer } = await withdraw(server, m, {}, { timestamp: nowSeconds(offset) });
      expect(answer.status).toBe(200);
    }
  });

  it("accepts an upper-case request id, signed as sent", async () => {
    const requestId = randomUUID().toUpperCase();
    const { answer } = await withdraw(server, m, {}, { requestId });
    expect(answer.status).toBe(200);
    expect(answer.body.request.id).toBe(requestId);
  });

  it("signs the path without the query string", async () => {
    const { answer } = await withdraw(server, m, {}, { path: `${WITHDRAWALS_PATH}?debug=1` });
    expect(answer.status).toBe(200);
  });

  it("signs the canonical form of numbers like 1.0 and of escaped characters, whatever the text sent", async () => {
    const rawBody = `{ "withdrawalMethodId" : 1.0e0,\n "amount": 10.50, "currency": "\\u0055SDT" }`.replace(
      "1.0e0",
      `${m.methodId}.0`,
    );
    const signedBody = jcs(JSON.parse(rawBody));
    expect(signedBody).toBe(`{"amount":10.5,"currency":"USDT","withdrawalMethodId":${m.methodId}}`);
    const { answer } = await withdraw(server, m, {}, { rawBody, signedBody });
    expect(answer.status).toBe(200);
    expect(answer.body.request.amount).toBe("10.5");
    expect(answer.body.request.withdrawal_method_id).toBe(m.methodId);
  });

  it("verifies non-ASCII strings over their UTF-8 bytes (then the business rules answer)", async () => {
    const body = { currency: "ÜSDT€😂", amount: "10", withdrawalMethodId: m.methodId };
    const utf8 = await withdraw(server, m, body);
    expectProblem(utf8.answer, 400, "withdrawal_method_currency_mismatch");
    const latin1 = await withdraw(server, m, body, { messageEncoding: "latin1" });
    expectProblem(latin1.answer, 401, "invalid_signature");
  });
});

describe("401: API key, timestamp, request id, signature", () => {
  it("refuses a missing or unknown API key", async () => {
    expectProblem((await withdraw(server, m, {}, { headers: { "x-api-key": null } })).answer, 401, "unauthorized");
    expectProblem((await withdraw(server, m, {}, { apiKey: "pk_unknown" })).answer, 401, "invalid_api_key");
  });

  it("refuses stale, future and millisecond timestamps", async () => {
    // 10 s beyond the window: a loaded machine may take a second or more between signing and checking.
    for (const timestamp of [nowSeconds(-310), nowSeconds(310), String(Date.now()), nowSeconds(-3600)]) {
      expectProblem((await withdraw(server, m, {}, { timestamp })).answer, 401, "invalid_timestamp");
    }
  });

  it("refuses a missing or malformed timestamp", async () => {
    expectProblem(
      (await withdraw(server, m, {}, { headers: { "x-service-timestamp": null } })).answer,
      401,
      "invalid_timestamp",
    );
    for (const timestamp of [
      `${nowSeconds()}.0`,
      `+${nowSeconds()}`,
      `0${nowSeconds()}`,
      "now",
      new Date().toISOString(),
    ]) {
      expectProblem((await withdraw(server, m, {}, { timestamp })).answer, 401, "invalid_timestamp");
    }
  });

  it("refuses request ids that are not UUIDs in 8-4-4-4-12 form", async () => {
    const uuid = randomUUID();
    for (const requestId of ["order-42", uuid.replaceAll("-", ""), `{${uuid}}`, uuid.slice(0, 35), `${uuid}0`]) {
      expectProblem((await withdraw(server, m, {}, { requestId })).answer, 401, "invalid_request_id");
    }
    expectProblem(
      (await withdraw(server, m, {}, { headers: { "x-service-request-id": null } })).answer,
      401,
      "invalid_request_id",
    );
  });

  it("refuses upper-case, short, long, v2= and bare signatures as malformed", async () => {
    const good = (await withdraw(server, m, {}, { headers: { "x-service-request-signature": null } })).signature;
    const hex = good.slice(3);
    for (const signature of [`v1=${hex.toUpperCase()}`, `v1=${hex.slice(2)}`, `v1=${hex}00`, `v2=${hex}`, hex, ""]) {
      expectProblem((await withdraw(server, m, {}, { signature })).answer, 401, "invalid_signature_format");
    }
    expectProblem(
      (await withdraw(server, m, {}, { headers: { "x-service-request-signature": null } })).answer,
      401,
      "invalid_signature_format",
    );
  });

  it("refuses a signature made with the hex-decoded secret", async () => {
    const { answer } = await withdraw(server, m, {}, { secret: Buffer.from(m.secretKey, "hex") });
    expectProblem(answer, 401, "invalid_signature");
  });

  it("refuses a signature made with another key's secret", async () => {
    const other = await fundedMerchant(server, "0");
    expectProblem((await withdraw(server, m, {}, { secret: other.secretKey })).answer, 401, "invalid_signature");
  });

  it("refuses a path signed without /public/v1, or with a host or query", async () => {
    for (const signedPath of [
      "/withdrawals/create",
      `${server.baseUrl}${WITHDRAWALS_PATH}`,
      `${WITHDRAWALS_PATH}?debug=1`,
      `${WITHDRAWALS_PATH}/`,
    ]) {
      const { answer } = await withdraw(server, m, {}, { path: `${WITHDRAWALS_PATH}?debug=1`, signedPath });
      expectProblem(answer, 401, "invalid_signature");
    }
  });

  it("refuses a body signed in non-canonical form: keys as sent, or only the top level sorted", async () => {
    const rawBody = `{"withdrawalMethodId":${m.methodId},"currency":"USDT","amount":"10"}`;
    expectProblem((await withdraw(server, m, {}, { rawBody, signedBody: rawBody })).answer, 401, "invalid_signature");
    const spaced = `{"amount": "10", "currency": "USDT", "withdrawalMethodId": ${m.methodId}}`;
    expectProblem(
      (await withdraw(server, m, {}, { rawBody: spaced, signedBody: spaced })).answer,
      401,
      "invalid_signature",
    );
  });

  it("refuses a tampered body, timestamp, request id or method", async () => {
    const signedBody = jcs({ currency: "USDT", amount: "10", withdrawalMethodId: m.methodId });
    const tampered = await withdraw(server, m, { amount: "11" }, { signedBody });
    expectProblem(tampered.answer, 401, "invalid_signature");

    const timestamp = nowSeconds();
    const requestId = randomUUID();
    const message = signingMessage({ path: WITHDRAWALS_PATH, timestamp, requestId, body: signedBody });
    const signature = signatureHeader(m.secretKey, message);
    const base = { rawBody: signedBody, signature, requestId, timestamp };
    expectProblem(
      (await withdraw(server, m, {}, { ...base, timestamp: nowSeconds(-1) })).answer,
      401,
      "invalid_signature",
    );
    expectProblem(
      (await withdraw(server, m, {}, { ...base, requestId: randomUUID() })).answer,
      401,
      "invalid_signature",
    );
    expectProblem(
      (await withdraw(server, m, {}, { ...base, requestId: requestId.toUpperCase() })).answer,
      401,
      "invalid_signature",
    );
    const getSigned = signatureHeader(
      m.secretKey,
      signingMessage({ method: "GET", path: WITHDRAWALS_PATH, timestamp, requestId, body: signedBody }),
    );
    expectProblem((await withdraw(server, m, {}, { ...base, signature: getSigned })).answer, 401, "invalid_signature");
    // Untampered, the same parts pass.
    expect((await withdraw(server, m, {}, base)).answer.status).toBe(200);
  });

  it("treats repeated signature headers as invalid", async () => {
    const ts = nowSeconds();
    const id = randomUUID();
    expectProblem(
      (await withdraw(server, m, {}, { timestamp: ts, headers: { "x-service-timestamp": [ts, ts] } })).answer,
      401,
      "invalid_timestamp",
    );
    expectProblem(
      (await withdraw(server, m, {}, { requestId: id, headers: { "x-service-request-id": [id, id] } })).answer,
      401,
      "invalid_request_id",
    );
    const once = await withdraw(server, m, {}, { headers: { "x-service-request-signature": null } });
    expectProblem(
      (await withdraw(server, m, {}, { headers: { "x-service-request-signature": [once.signature, once.signature] } }))
        .answer,
      401,
      "invalid_signature_format",
    );
  });
});

describe("403: keys issued before signed operations", () => {
  it("refuses a legacy key that has no secret, while it still works on unsigned endpoints", async () => {
    const apiKey = await legacyKey(m.id);
    expectProblem((await withdraw(server, m, {}, { apiKey })).answer, 403, "api_key_reissue_required");
    const me = await rawCall(server.baseUrl, "GET", "/public/v1/me", { "x-api-key": apiKey });
    expect(me.status).toBe(200);
  });
});

describe("check order of product §8", () => {
  it("API key before anything: an unknown key with every other header wrong is 401 invalid_api_key", async () => {
    const { answer } = await withdraw(
      server,
      m,
      {},
      {
        apiKey: "pk_nobody",
        timestamp: "soon",
        signature: "v2=x",
        headers: { "content-type": "text/plain" },
      },
    );
    expectProblem(answer, 401, "invalid_api_key");
  });

  it("key must be reissued (403) before header formats, content type, size and signature", async () => {
    const apiKey = await legacyKey(m.id);
    const cases = [
      { signature: WRONG_SIGNATURE },
      { timestamp: "0", requestId: "x", signature: "v2=no" },
      { headers: { "content-type": "text/plain" } },
      { rawBody: `{"a":${"1".repeat(70 * 1024)}}`, signedBody: "{}" },
      { rawBody: '{"a":1,"a":1}', signedBody: "{}" },
    ];
    for (const options of cases) {
      expectProblem((await withdraw(server, m, {}, { apiKey, ...options })).answer, 403, "api_key_reissue_required");
    }
  });

  it("header formats (401) before content type (415)", async () => {
    const textPlain = { "content-type": "text/plain" };
    expectProblem(
      (await withdraw(server, m, {}, { timestamp: "1", headers: textPlain })).answer,
      401,
      "invalid_timestamp",
    );
    expectProblem(
      (await withdraw(server, m, {}, { requestId: "1", headers: textPlain })).answer,
      401,
      "invalid_request_id",
    );
    expectProblem(
      (await withdraw(server, m, {}, { signature: "v1=ABC", headers: textPlain })).answer,
      401,
      "invalid_signature_format",
    );
  });

  it("content type (415) before the signature itself (401), which needs the parsed body", async () => {
    for (const contentType of ["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1"]) {
      const { answer } = await withdraw(
        server,
        m,
        {},
        { signature: WRONG_SIGNATURE, headers: { "content-type": contentType } },
      );
      expectProblem(answer, 415, "unsupported_media_type");
    }
    const missing = await withdraw(server, m, {}, { signature: WRONG_SIGNATURE, headers: { "content-type": null } });
    expectProblem(missing.answer, 415, "unsupported_media_type");
    // application/json with a UTF-8 charset parameter is JSON.
    const withCharset = await withdraw(
      server,
      m,
      {},
      { headers: { "content-type": "application/json; charset=UTF-8" } },
    );
    expect(withCharset.answer.status).toBe(200);
  });

  it("size (413) before JSON (400) and signature (401)", async () => {
    const rawBody = `{"currency":"USDT","amount":"10","withdrawalMethodId":${m.methodId},"pad":"${"x".repeat(64 * 1024)}"}`;
    const { answer } = await withdraw(server, m, {}, { rawBody, signature: WRONG_SIGNATURE });
    expectProblem(answer, 413, "payload_too_large");
  });

  it("JSON without duplicate names (400) before the signature (401)", async () => {
    const cases: [string, string][] = [
      [
        `{"currency":"USDT","currency":"USDT","amount":"10","withdrawalMethodId":${m.methodId}}`,
        "duplicate_member_name",
      ],
      ['{"currency":', "malformed_json"],
      ['{"currency":"\\ud800"}', "invalid_text"],
      ["", "malformed_json"],
    ];
    for (const [rawBody, code] of cases) {
      const { answer } = await withdraw(server, m, {}, { rawBody, signedBody: "{}", signature: WRONG_SIGNATURE });
      expectProblem(answer, 400, code);
    }
  });

  it("a duplicate member name is refused even when signed correctly over what the parser would keep", async () => {
    const rawBody = `{"currency":"USDT","amount":"10","amount":"10","withdrawalMethodId":${m.methodId}}`;
    const signedBody = jcs({ currency: "USDT", amount: "10", withdrawalMethodId: m.methodId });
    expectProblem((await withdraw(server, m, {}, { rawBody, signedBody })).answer, 400, "duplicate_member_name");
  });

  it("signature (401) before the body schema (400)", async () => {
    const { answer } = await withdraw(server, m, { extra: true }, { signature: WRONG_SIGNATURE });
    expectProblem(answer, 401, "invalid_signature");
  });

  it("request-id idempotency (409) before the body schema (400)", async () => {
    const first = await withdraw(server, m);
    expect(first.answer.status).toBe(200);
    const reused = await withdraw(server, m, { extra: true }, { requestId: first.requestId });
    expectProblem(reused.answer, 409, "request_id_reused");
  });

  it("body schema (400) after a good signature, and nothing is recorded", async () => {
    const requestId = randomUUID();
    const cases: Record<string, unknown>[] = [
      { extra: 1 },
      { withdrawalMethodId: 1.5 },
      { withdrawalMethodId: String(m.methodId) },
      { amount: true },
      { amount: null },
      { currency: 5 },
    ];
    for (const body of cases) {
      const { answer } = await withdraw(server, m, body, { requestId });
      expectProblem(answer, 400, "validation_failed");
      expect(answer.body.errors.length).toBeGreaterThan(0);
    }
    const missing = await signedCall(server.baseUrl, {
      apiKey: m.apiKey,
      secret: m.secretKey,
      requestId,
      body: { currency: "USDT", amount: "10" },
    });
    expectProblem(missing.answer, 400, "validation_failed");
    expect(missing.answer.body.errors).toEqual([{ pointer: "/withdrawalMethodId", detail: "is required" }]);
    for (const body of [[], "x", 5, null]) {
      const { answer } = await withdraw(server, m, {}, { requestId, rawBody: JSON.stringify(body) });
      expectProblem(answer, 400, "validation_failed");
    }
    // The id is still free.
    expect((await withdraw(server, m, {}, { requestId })).answer.status).toBe(200);
    await expectLedgerBalanced(server);
  });
});

describe("rate limit (429) after the key and before 403", () => {
  it("limits per API key, legacy keys included, before telling them to reissue", async () => {
    const limited = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: "2" } });
    try {
      const merchant = await fundedMerchant(limited, "100");
      const issued = await admin(limited, "POST", `/merchants/${merchant.id}/api-keys`, { legacy: true });
      const legacy = issued.body.apiKey as string;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push(
          (await withdraw(limited, merchant, {}, { apiKey: legacy, signature: WRONG_SIGNATURE })).answer.status,
        );
      }
      expect(statuses).toEqual([403, 403, 429]);
      const unknown = await withdraw(limited, merchant, {}, { apiKey: "pk_unknown" });
      expectProblem(unknown.answer, 401, "invalid_api_key");
      // The merchant's other key has its own budget.
      expect((await withdraw(limited, merchant)).answer.status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe("no input produces a 500", () => {
  const printable = fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    maxLength: 80,
  });

  it("answers malformed headers with 401 and odd bodies with 400, never 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ timestamp: printable, requestId: printable, signature: printable }, { requiredKeys: [] }),
        fc.oneof(
          fc.json(),
          printable,
          fc.jsonValue().map((v) => JSON.stringify(v) ?? "null"),
        ),
        async (headers, rawBody) => {
          let signedBody = "{}";
          try {
            signedBody = jcs(JSON.parse(rawBody));
          } catch {
            // not JSON, or no canonical form: the server must refuse it before the signature
          }
          const { answer } = await withdraw(server, m, {}, { rawBody, signedBody, ...headers });
          expect(answer.status).toBeGreaterThanOrEqual(200);
          expect(answer.status).toBeLessThan(500);
          if (answer.status !== 200) expect(answer.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        },
      ),
      { numRuns: 60 },
    );
  });
});
