// Fuzzer: generated hostile requests against every route of every surface; never a 5xx, and no 4xx changes stored state.
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { storeDigest } from "../support/digest.ts";
import { useTestServer } from "../support/fixture.ts";
import { admin, createMerchant } from "../support/server.ts";
import { jcs, nowSeconds, signatureHeader, signingMessage } from "../support/signing.ts";

let apiKey: string;
let secretKey: string;
let methodId: number;
let legacyKey: string;
let merchantId: string;

const server = useTestServer({ env: { RATE_LIMIT_PER_MINUTE: "0" } });
beforeAll(async () => {
  const m = await createMerchant(server);
  merchantId = m.id;
  apiKey = m.apiKey;
  secretKey = m.secretKey;
  methodId = (
    await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, { currency: "USDT", address: "0xfuzz" })
  ).body.id;
  legacyKey = (await admin(server, "POST", `/merchants/${m.id}/api-keys`, { legacy: true })).body.apiKey;
  await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
    currency: "USDT",
    amount: "500",
    memo: "fuzz",
  });
});

/** Strings that break naive code: unicode edge cases, lone surrogates, NUL, huge, path tricks. */
const nastyString = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.string({
    unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
    minLength: 1,
    maxLength: 3,
  }),
  fc.constantFrom(
    "",
    "\u0000",
    "a\u0000b",
    "\ud800",
    "\udfff\ud800",
    "\u202e",
    "\ufeff",
    "../../etc/passwd",
    "%2e%2e%2f",
    "' OR 1=1 --",
    "<script>",
    "USDT",
    "EUR",
    "ETH",
    "100",
    "100.50",
    "0",
    "-1",
    "1e5",
    "0.0000001",
    "a@example.com",
    "https://example.com/cb",
    "http://127.0.0.1:1/",
    "2030-01-01T00:00:00Z",
    "b2b",
    "b2c",
    "merchant",
    "payer",
    "active",
    "suspended",
    "00000000-0000-0000-0000-000000000000",
  ),
  fc.nat({ max: 70_000 }).map((n) => "x".repeat(n)),
);

const nastyNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(0, -0, 1, -1, 1.0, 0.1, 1e21, 1e-7, 2 ** 53 + 1, Number.MAX_VALUE, Number.MIN_VALUE),
);

const leaf = fc.oneof(nastyString, nastyNumber, fc.boolean(), fc.constant(null));
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 4 }),
  object: fc.dictionary(nastyString, tie("value"), { maxKeys: 4 }),
})).value;

const FIELD_NAMES = [
  "email",
  "merchantName",
  "feePercent",
  "feesPaidBy",
  "status",
  "whitelabeling",
  "legacy",
  "apiKey",
  "currency",
  "address",
  "label",
  "amount",
  "memo",
  "withdrawalMin",
  "withdrawalMax",
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
  "withdrawalMethodId",
  "invoiceId",
  "reason",
  "withdrawToSameAddress",
  "fromAddress",
  "txId",
  "confirmed",
  "amlFlag",
  "decision",
];

/** Bodies shaped like the real ones (known field names, hostile values), so requests get past the first check. */
const shapedBody = fc.dictionary(fc.constantFrom(...FIELD_NAMES), value, { maxKeys: 6 });

function deep(depth: number): string {
  return `${"[".repeat(depth)}${"]".repeat(depth)}`;
}

/** Raw body text: JSON of generated values, plus forms JSON.stringify cannot produce. */
const rawBody = fc.oneof(
  { weight: 4, arbitrary: shapedBody.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: value.map((v) => JSON.stringify(v) ?? "null") },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(...FIELD_NAMES), leaf, leaf)
      .map(([k, a, b]) => `{"${k}":${JSON.stringify(a)},"${k}":${JSON.stringify(b)}}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('{"email":"\\ud800"}', '{"a":"\\u0000"}', '{"amount":1e400}', "{", "", "  ", "\u0000"),
  },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 20_000 }).map((d) => `{"x":${deep(d)}}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 50 }) },
);

type HeaderSet = [string, string][];

const headerChoices = fc.record({
  apiKey: fc.constantFrom("valid", "legacy", "unknown", "empty", "repeated", "none"),
  admin: fc.constantFrom("valid", "wrong", "none"),
  contentType: fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "none",
    "application/problem+json",
  ),
  /** Correctly signed with the merchant's secret, so the body reaches schema and business validation. */
  validSignature: fc.boolean(),
  signed: fc.option(
    fc.record({
      timestamp: fc.oneof(fc.constant(String(Math.floor(Date.now() / 1000))), nastyString),
      requestId: fc.oneof(fc.uuid().map(String), nastyString),
      signature: fc.oneof(fc.stringMatching(/^v1=[0-9a-f]{64}$/), nastyString),
    }),
  ),
});

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

function fillPath(url: string, params: string[]): string {
  let i = 0;
  return url.replace(/:[A-Za-z_]+/g, () => {
    const p = params[i++ % Math.max(params.length, 1)] ?? "";
    // Lone surrogates cannot be percent-encoded as text: send the bytes Node would write for them.
    const encoded = [...Buffer.from(p, "utf8")].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
    return encoded.slice(0, 3000);
  });
}

describe("fuzzer", () => {
  it("answers every generated request below 500 with a problem body, and 4xx answers change nothing", async () => {
    const routes = server.app.registeredRoutes.filter((r) => !r.url.startsWith("/docs") && r.method !== "HEAD");
    expect(routes.length).toBeGreaterThan(10);
    const paramPool = fc.array(fc.oneof(nastyString, fc.constant(merchantId), fc.constant("USDT"), fc.constant("1")), {
      minLength: 1,
      maxLength: 3,
    });
    const request = fc.record({
      route: fc.constantFrom(...routes),
      wrongMethod: fc.option(fc.constantFrom(...METHODS), { freq: 5 }),
      params: paramPool,
      headers: headerChoices,
      body: fc.option(rawBody, { freq: 4 }),
    });

    let requests = 0;
    let digests = 0;
    const statuses = new Map<number, number>();
    /** Answers to correctly signed requests on the signed routes: proof the fuzzer gets past the signature. */
    const pastSignature = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const method = r.wrongMethod ?? r.route.method;
        const path = fillPath(r.route.url, r.params);
        const headers: HeaderSet = [];
        if (r.headers.apiKey === "valid") headers.push(["x-api-key", apiKey]);
        if (r.headers.apiKey === "legacy") headers.push(["x-api-key", legacyKey]);
        if (r.headers.apiKey === "unknown") headers.push(["x-api-key", "pk_nope"]);
        if (r.headers.apiKey === "empty") headers.push(["x-api-key", ""]);
        if (r.headers.apiKey === "repeated") headers.push(["x-api-key", apiKey], ["x-api-key", legacyKey]);
        if (r.headers.admin === "valid") headers.push(["authorization", `Bearer ${server.adminToken}`]);
        if (r.headers.admin === "wrong") headers.push(["authorization", "Bearer wrong-token-value"]);
        if (r.headers.contentType !== "none" && r.body !== null) headers.push(["content-type", r.headers.contentType]);
        if (r.headers.validSignature && method === "POST") {
          // Signed the interface's way over whatever body is sent (canonical form when it is JSON).
          const text = r.body ?? "";
          let canonical = text;
          try {
            canonical = jcs(JSON.parse(text));
          } catch {
            // not JSON (or not canonicalizable): sign the raw text; the server refuses it earlier anyway
          }
          const timestamp = nowSeconds();
          const requestId = randomUUID();
          const signedPath = path.split("?")[0] ?? path;
          headers.push(
            ["x-service-timestamp", timestamp],
            ["x-service-request-id", requestId],
            [
              "x-service-request-signature",
              signatureHeader(secretKey, signingMessage({ path: signedPath, timestamp, requestId, body: canonical })),
            ],
          );
        } else if (r.headers.signed) {
          const clean = (s: string) => s.replace(/[^\x20-\x7e]/g, "").slice(0, 200);
          headers.push(
            ["x-service-timestamp", clean(r.headers.signed.timestamp)],
            ["x-service-request-id", clean(r.headers.signed.requestId)],
            ["x-service-request-signature", clean(r.headers.signed.signature)],
          );
        }
        const withBody = r.body !== null && method !== "GET" && method !== "HEAD";
        const before = await storeDigest(server.ctx.store);
        const response = await fetch(`${server.baseUrl}${path}`, {
          method,
          headers,
          body: withBody ? (r.body ?? undefined) : undefined,
        });
        const text = await response.text();
        requests++;
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (r.headers.validSignature && /withdrawals|refunds/.test(r.route.url) && r.wrongMethod === null) {
          pastSignature.set(response.status, (pastSignature.get(response.status) ?? 0) + 1);
        }
        const where = `${method} ${path.slice(0, 120)} -> ${response.status} ${text.slice(0, 300)}`;
        expect(response.status, where).toBeLessThan(500);
        // The payer's pages answer people, in HTML (the invoice's, a refund claim's, a subscription's and a
        // customer's deposit address's page on GET, a payment link's on GET and on its form's POST); every
        // API route answers problem details.
        const html =
          (["/pay/", "/refund/", "/s/", "/d/"].some((prefix) => r.route.url.startsWith(prefix)) && method === "GET") ||
          r.route.url.startsWith("/l/");
        if (response.status >= 400 && html) {
          expect(response.headers.get("content-type"), where).toMatch(/^(text\/html|application\/problem\+json)/);
        } else if (response.status >= 400) {
          expect(response.headers.get("content-type"), where).toMatch(/^application\/problem\+json/);
          const problem = JSON.parse(text) as { status: number; code: string };
          expect(problem.status, where).toBe(response.status);
          expect(problem.code, where).toMatch(/^[a-z_]+$/);
        }
        if (response.status >= 400) {
          digests++;
          expect(await storeDigest(server.ctx.store), `a ${response.status} changed the store: ${where}`).toBe(before);
        }
      }),
      { numRuns: 1000, interruptAfterTimeLimit: 40_000 },
    );
    const list = (m: Map<number, number>) =>
      [...m]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}×${n}`)
        .join(" ");
    process.stdout.write(
      `fuzzer (${server.ctx.store.dialect}): ${requests} requests over ${routes.length} routes; statuses ${list(statuses)}; ` +
        `correctly signed on signed routes: ${list(pastSignature)}; ${digests} store digests compared\n`,
    );
    expect(requests).toBeGreaterThan(100);
    // The run must have reached past the gates, not only bounced off them.
    expect([...statuses.keys()].some((s) => s === 200)).toBe(true);
    expect([...statuses.keys()].filter((s) => s >= 400).length).toBeGreaterThan(3);
  }, 60_000);

  it("drives correctly signed requests with hostile bodies into the signed operations: never a 5xx, 4xx change nothing", async () => {
    const signedRoutes = [
      "/public/v1/withdrawals/create",
      "/public/v1/refunds/refundCrypto",
      "/public/v1/refunds/refundFiat",
    ];
    const signedBody = fc.oneof(
      shapedBody,
      // Valid withdrawals, so some succeed and a reused request id meets a completed operation.
      fc.record({
        currency: fc.constant("USDT"),
        amount: fc.constantFrom("10", "10.5", "11", 12),
        withdrawalMethodId: fc.constant(0).map(() => methodId),
      }),
      fc.record(
        {
          currency: fc.oneof(fc.constantFrom("USDT", "EUR", "ETH"), nastyString),
          amount: fc.oneof(
            fc.constantFrom("10", "10.5", "0.0000001", "99999999", "-5", "1e3"),
            nastyNumber,
            nastyString,
          ),
          withdrawalMethodId: fc.oneof(fc.integer({ min: -2, max: 5 }), nastyNumber, nastyString),
        },
        { requiredKeys: [] },
      ),
      fc.record(
        {
          invoiceId: fc.oneof(nastyString, fc.uuid().map(String)),
          reason: nastyString,
          address: nastyString,
          withdrawToSameAddress: fc.oneof(fc.boolean(), leaf),
        },
        { requiredKeys: [] },
      ),
    );
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...signedRoutes), signedBody, fc.boolean(), async (path, body, reuseId) => {
        const text = JSON.stringify(body);
        const timestamp = nowSeconds();
        const requestId = reuseId ? "7d3c4f8e-1a2b-4c5d-8e9f-0a1b2c3d4e5f" : randomUUID();
        let canonical = text;
        try {
          canonical = jcs(JSON.parse(text));
        } catch {
          // lone surrogates cannot be canonicalized; the server refuses the body before it checks a signature
        }
        const signature = signatureHeader(secretKey, signingMessage({ path, timestamp, requestId, body: canonical }));
        const before = await storeDigest(server.ctx.store);
        const response = await fetch(`${server.baseUrl}${path}`, {
          method: "POST",
          headers: {
            "x-api-key": apiKey,
            "content-type": "application/json",
            "x-service-timestamp": timestamp,
            "x-service-request-id": requestId,
            "x-service-request-signature": signature,
          },
          body: text,
        });
        const answer = await response.text();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const where = `${path} ${text.slice(0, 200)} -> ${response.status} ${answer.slice(0, 200)}`;
        expect(response.status, where).toBeLessThan(500);
        if (response.status >= 400) {
          expect(response.headers.get("content-type"), where).toMatch(/^application\/problem\+json/);
          expect(await storeDigest(server.ctx.store), `a ${response.status} changed the store: ${where}`).toBe(before);
        }
      }),
      { numRuns: 300, interruptAfterTimeLimit: 30_000 },
    );
    const list = [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([st, n]) => `${st}×${n}`)
      .join(" ");
    process.stdout.write(`fuzzer, signed operations (${server.ctx.store.dialect}): statuses ${list}\n`);
    // Past the signature: business and schema answers, not only 401s.
    expect((statuses.get(400) ?? 0) + (statuses.get(200) ?? 0)).toBeGreaterThan(50);
  }, 60_000);
});
