// A header the service reads is sent at most once: repeated, even with the same valid value, it is refused with the header's own code and changes nothing.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { READ_HEADERS, repeatedReadHeader } from "../../src/http/headers.ts";
import { useTestServer } from "../support/fixture.ts";
import { expectProblem } from "../support/server.ts";
import { jcs, nowSeconds, rawCall, signatureHeader, signingMessage, WITHDRAWALS_PATH } from "../support/signing.ts";
import { balanceOf, type FundedMerchant, fundedMerchant } from "../support/withdrawals.ts";

let m: FundedMerchant;
const server = useTestServer();
beforeAll(async () => {
  m = await fundedMerchant(server);
});

/** A correctly signed withdrawal's headers and body. */
function signedWithdrawal(): { headers: Record<string, string | string[]>; body: string } {
  const body = JSON.stringify({ currency: "USDT", amount: "10", withdrawalMethodId: m.methodId });
  const timestamp = nowSeconds();
  const requestId = randomUUID();
  const message = signingMessage({
    method: "POST",
    path: WITHDRAWALS_PATH,
    timestamp,
    requestId,
    body: jcs(JSON.parse(body)),
  });
  return {
    body,
    headers: {
      "x-api-key": m.apiKey,
      "x-service-timestamp": timestamp,
      "x-service-request-id": requestId,
      "x-service-request-signature": signatureHeader(m.secretKey, message),
      "content-type": "application/json",
    },
  };
}

describe("repeated headers", () => {
  it("a correctly signed withdrawal goes through when every header is sent once", async () => {
    const { headers, body } = signedWithdrawal();
    expect((await rawCall(server.baseUrl, "POST", WITHDRAWALS_PATH, headers, body)).status).toBe(200);
  });

  it.each([
    ["content-type", 415, "unsupported_media_type"],
    ["x-api-key", 401, "invalid_api_key"],
    ["x-service-timestamp", 401, "invalid_timestamp"],
    ["x-service-request-id", 401, "invalid_request_id"],
    ["x-service-request-signature", 401, "invalid_signature_format"],
    ["x-request-id", 400, "validation_failed"],
  ] as const)(
    "refuses a signed withdrawal whose %s is repeated with its own valid value (%i %s), debiting nothing",
    async (name, status, code) => {
      const before = await balanceOf(server, m.id);
      const { headers, body } = signedWithdrawal();
      const value = name === "x-request-id" ? "trace-1" : (headers[name] as string);
      const answer = await rawCall(
        server.baseUrl,
        "POST",
        WITHDRAWALS_PATH,
        { ...headers, [name]: [value, value] },
        body,
      );
      expectProblem(answer, status, code);
      expect(answer.body.detail).toContain(name);
      expect(await balanceOf(server, m.id)).toBe(before);
    },
  );

  it("refuses a repeated content-type whose first value is JSON (Node keeps only the first)", async () => {
    const { headers, body } = signedWithdrawal();
    const answer = await rawCall(
      server.baseUrl,
      "POST",
      WITHDRAWALS_PATH,
      { ...headers, "content-type": ["application/json", "text/plain"] },
      body,
    );
    expectProblem(answer, 415, "unsupported_media_type");
  });

  it("refuses a repeated authorization on the operator API even when both are the token (Node keeps only the first)", async () => {
    const token = `Bearer ${server.adminToken}`;
    const once = await rawCall(server.baseUrl, "GET", "/admin/v1/currencies", { authorization: token });
    expect(once.status).toBe(200);
    const twice = await rawCall(server.baseUrl, "GET", "/admin/v1/currencies", {
      authorization: [token, "Bearer other"],
    });
    expectProblem(twice, 401, "invalid_admin_token");
  });

  it("refuses a repeated content-type on unsigned bodies too (operator API)", async () => {
    const answer = await rawCall(
      server.baseUrl,
      "POST",
      "/admin/v1/merchants",
      { authorization: `Bearer ${server.adminToken}`, "content-type": ["application/json", "application/json"] },
      JSON.stringify({ email: "twice@example.com" }),
    );
    expectProblem(answer, 415, "unsupported_media_type");
  });

  it("ignores headers the service does not read, repeated or not", async () => {
    const answer = await rawCall(server.baseUrl, "GET", "/public/v1/version", { accept: ["application/json", "*/*"] });
    expect(answer.status).toBe(200);
  });

  it("finds a repeat among the headers it reads, in any case", () => {
    expect(repeatedReadHeader(["Content-Type", "a", "X-Other", "b", "content-type", "c"])).toBe("content-type");
    expect(repeatedReadHeader(["X-Other", "a", "x-other", "b"])).toBeNull();
    for (const name of Object.keys(READ_HEADERS)) {
      expect(repeatedReadHeader([name.toUpperCase(), "1", name, "1"])).toBe(name);
    }
  });
});
