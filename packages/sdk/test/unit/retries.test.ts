// The SDK's retry rules against a scripted HTTP server: what is retried, with which request id, body and signature, and what never is.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PaymentsApiError, PaymentsClient, PaymentsConnectionError, signRequest } from "../../src/index.ts";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
  at: number;
}
type Script = (res: ServerResponse, seen: Seen) => void;

let baseUrl: string;
let seen: Seen[] = [];
let script: Script[] = [];
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const entry = {
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
      at: Date.now(),
    };
    seen.push(entry);
    (script.shift() ?? ok)(res, entry);
  });
});

const problem =
  (status: number, code: string, headers: Record<string, string> = {}): Script =>
  (res) => {
    res.writeHead(status, { "content-type": "application/problem+json", ...headers });
    res.end(JSON.stringify({ type: "about:blank", title: code, status, detail: `a ${code}`, code }));
  };
const ok: Script = (res, entry) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ request: { id: entry.headers["x-service-request-id"], status: "processing" } }));
};
const hangUp: Script = (res) => res.socket?.destroy();
const silent: Script = () => {};

const secretKey = "5a1f0c3e9b7d4a2f8c6e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a";
const client = (options: { maxRetries?: number; timeoutMs?: number } = {}) =>
  new PaymentsClient({ baseUrl, apiKey: "key_1", secretKey, maxRetries: 3, ...options });
const withdrawal = { currency: "USDT", amount: "10", withdrawalMethodId: 1 };

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
const reset = (...steps: Script[]) => {
  seen = [];
  script = steps;
};

describe("safe retries", () => {
  it("retries a lost answer, a 5xx and a 409 request_in_progress with the same request id and body, each attempt signed afresh", async () => {
    reset(hangUp, problem(503, "unavailable"), problem(409, "request_in_progress"));
    const requestId = "0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b";
    const answer = await client().createWithdrawal(withdrawal, { requestId });
    expect(answer.request.id).toBe(requestId);
    expect(seen).toHaveLength(4);
    for (const attempt of seen) {
      expect(attempt.url).toBe("/public/v1/withdrawals/create");
      expect(attempt.headers["x-service-request-id"]).toBe(requestId);
      expect(attempt.body).toBe(seen[0]!.body);
      const timestamp = attempt.headers["x-service-timestamp"] as string;
      expect(attempt.headers["x-service-request-signature"]).toBe(
        signRequest({ path: attempt.url, timestamp, requestId, body: JSON.parse(attempt.body), secretKey }),
      );
    }
    // Backoff: the attempts are spread out, not sent back to back.
    expect(seen[3]!.at - seen[0]!.at).toBeGreaterThanOrEqual(250 + 500 + 1000);
  });

  it("makes a new UUID request id when none is given, and keeps it across retries", async () => {
    reset(problem(502, "bad_gateway"));
    const answer = await client().createWithdrawal(withdrawal);
    expect(answer.request.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(seen.map((s) => s.headers["x-service-request-id"])).toEqual([answer.request.id, answer.request.id]);
  });

  it("honours Retry-After on a 429", async () => {
    reset(problem(429, "rate_limited", { "retry-after": "2" }));
    await client().createWithdrawal(withdrawal);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1900);
  });

  it("retries an attempt that timed out", async () => {
    reset(silent);
    const answer = await client({ timeoutMs: 300 }).createWithdrawal(withdrawal);
    expect(seen).toHaveLength(2);
    expect(answer.request.status).toBe("processing");
  });

  it("never retries a 400, a 401, a 403 or a 409 conflict, and says what failed", async () => {
    for (const [status, code] of [
      [400, "validation_failed"],
      [401, "invalid_signature"],
      [403, "api_key_reissue_required"],
      [409, "request_id_reused"],
      [409, "request_needs_reconciliation"],
    ] as const) {
      reset(problem(status, code));
      const error = await client()
        .createWithdrawal(withdrawal, { requestId: "0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b" })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsApiError);
      expect(error).toMatchObject({
        status,
        code,
        requestId: "0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b",
        attempts: 1,
        problem: { status, code, detail: `a ${code}` },
      });
      expect(seen).toHaveLength(1);
    }
  });

  it("stops after maxRetries and reports the last answer, or the lost connection", async () => {
    reset(problem(500, "internal"), problem(500, "internal"), problem(500, "internal"));
    const error = await client({ maxRetries: 2 })
      .me()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 500, code: "internal", attempts: 3 });
    expect(seen).toHaveLength(3);

    reset(hangUp, hangUp);
    const lost = await client({ maxRetries: 1 })
      .createWithdrawal(withdrawal)
      .catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(PaymentsConnectionError);
    expect((lost as PaymentsConnectionError).code).toBe("network");
    expect((lost as PaymentsConnectionError).requestId).toBe(seen[0]!.headers["x-service-request-id"]);
    expect(seen).toHaveLength(2);
  });

  it("gives CreateInvoice an idempotency key, so that its retry cannot create a second invoice", async () => {
    reset(hangUp);
    await client().createInvoice({ currency: "USDT", amount: "5" });
    expect(seen).toHaveLength(2);
    const [first, second] = seen.map((s) => JSON.parse(s.body));
    expect(first.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).toEqual(first);
    expect(seen[0]!.headers["x-service-request-signature"]).toBeUndefined();
  });

  it("refuses a request id that is not a UUID, and a signed call without a secret key, before sending anything", async () => {
    reset();
    await expect(client().createWithdrawal(withdrawal, { requestId: "abc" })).rejects.toThrow(TypeError);
    const unsigned = new PaymentsClient({ baseUrl, apiKey: "key_1" });
    await expect(unsigned.refundFiat({ invoiceId: "inv_1" })).rejects.toThrow(/secretKey/);
    expect(seen).toHaveLength(0);
  });
});
