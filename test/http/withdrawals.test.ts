// CreateWithdrawal: the accepted answer, business rules 1-4, and safe retries of the request id.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { admin, createMerchant, expectProblem } from "../support/server.ts";
import { jcs, nowSeconds } from "../support/signing.ts";
import {
  balanceOf,
  expectLedgerBalanced,
  type FundedMerchant,
  fundedMerchant,
  movementCount,
  payoutWorker,
  withdraw,
} from "../support/withdrawals.ts";

const server = useTestServer();

const REQUEST_KEYS = [
  "amount",
  "created_at",
  "currency",
  "id",
  "payout_processor_status",
  "payout_processor_tx_id",
  "status",
  "updated_at",
  "withdrawal_method_id",
];

describe("an accepted withdrawal", () => {
  it("answers { request } with exactly the nine PublicWithdrawalRequest properties", async () => {
    const m = await fundedMerchant(server, "100");
    const { answer, requestId } = await withdraw(server, m, { amount: "12.50" });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
    expect(Object.keys(answer.body)).toEqual(["request"]);
    const request = answer.body.request;
    expect(Object.keys(request).sort()).toEqual(REQUEST_KEYS);
    expect(request).toEqual({
      id: requestId,
      currency: "USDT",
      amount: "12.5",
      withdrawal_method_id: m.methodId,
      status: "processing",
      payout_processor_status: null,
      payout_processor_tx_id: null,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      updated_at: request.created_at,
    });
    expect(answer.text).toContain(`"withdrawal_method_id":${m.methodId},`);
    expect(await balanceOf(server, m.id)).toBe("87.5");
    expect(await movementCount(server, requestId, "debit")).toBe(1);
    await expectLedgerBalanced(server);
  });

  it("reads a JSON number amount through its shortest decimal form", async () => {
    const m = await fundedMerchant(server, "100");
    const { answer } = await withdraw(server, m, { amount: 10.25 });
    expect(answer.status).toBe(200);
    expect(answer.body.request.amount).toBe("10.25");
    expect(await balanceOf(server, m.id)).toBe("89.75");
  });

  it("works for the demo merchant of a first start", async () => {
    const demo = { ...server.demo, id: server.demo.merchantId, methodId: server.demo.withdrawalMethodId };
    const { answer } = await withdraw(server, demo, { amount: "25" });
    expect(answer.status).toBe(200);
    expect(await balanceOf(server, demo.id)).toBe("975");
  });
});

describe("business rules (400, each with its own code, nothing recorded)", () => {
  let m: FundedMerchant;
  beforeAll(async () => {
    m = await fundedMerchant(server, "50");
  });

  async function refused(body: Record<string, unknown>, code: string, merchant = m): Promise<void> {
    const requestId = randomUUID();
    const { answer } = await withdraw(server, merchant, body, { requestId });
    expectProblem(answer, 400, code);
    expect(answer.body.errors?.[0]?.pointer).toMatch(/^\//);
    // A 400 records nothing: the same request id is still free (it fails again the same way).
    const again = await withdraw(server, merchant, body, { requestId, timestamp: nowSeconds(-1) });
    expectProblem(again.answer, 400, code);
  }

  it("rule 1: the method must exist, belong to the merchant and use the currency", async () => {
    const other = await fundedMerchant(server, "50");
    await refused({ withdrawalMethodId: 987654 }, "withdrawal_method_not_found");
    await refused({ withdrawalMethodId: other.methodId }, "withdrawal_method_not_found");
    await refused({ withdrawalMethodId: 0 }, "withdrawal_method_not_found");
    await refused({ withdrawalMethodId: -3 }, "withdrawal_method_not_found");
    await refused({ withdrawalMethodId: 2 ** 40 }, "withdrawal_method_not_found");
    await refused({ withdrawalMethodId: 1e300 }, "withdrawal_method_not_found");
    await refused({ currency: "USDC" }, "withdrawal_method_currency_mismatch");
    await refused({ currency: "DOGE" }, "withdrawal_method_currency_mismatch");
  });

  it("rule 2: the merchant must be active", async () => {
    const suspended = await fundedMerchant(server, "50");
    expect((await admin(server, "PATCH", `/merchants/${suspended.id}`, { status: "suspended" })).status).toBe(200);
    await refused({}, "merchant_not_active", suspended);
    expect((await admin(server, "PATCH", `/merchants/${suspended.id}`, { status: "active" })).status).toBe(200);
    expect((await withdraw(server, suspended)).answer.status).toBe(200);
  });

  it("rule 3: the amount must be a valid positive amount within the operator's limits", async () => {
    const usdc = await fundedMerchant(server, "100000", "USDC");
    const limits = await admin(server, "PUT", "/currencies/USDC/limits", {
      withdrawalMin: "20",
      withdrawalMax: "30.5",
    });
    expect(limits.status).toBe(200);
    await refused({ currency: "USDC", amount: "19.999999" }, "amount_below_minimum", usdc);
    await refused({ currency: "USDC", amount: "30.500001" }, "amount_above_maximum", usdc);
    await refused({ currency: "USDC", amount: 31 }, "amount_above_maximum", usdc);
    expect((await withdraw(server, usdc, { currency: "USDC", amount: "20" })).answer.status).toBe(200);
    expect((await withdraw(server, usdc, { currency: "USDC", amount: "30.5" })).answer.status).toBe(200);
    await admin(server, "PUT", "/currencies/USDC/limits", { withdrawalMin: "10", withdrawalMax: "100000" });

    await refused({ amount: "1e1" }, "invalid_amount");
    await refused({ amount: "10 " }, "invalid_amount");
    await refused({ amount: "010" }, "invalid_amount");
    await refused({ amount: "-10" }, "amount_not_positive");
    await refused({ amount: "0" }, "amount_not_positive");
    await refused({ amount: 0 }, "amount_not_positive");
    await refused({ amount: "10.0000001" }, "amount_too_precise");
    await refused({ amount: "9.99" }, "amount_below_minimum");
  });

  it("rule 4: the available balance must cover it, and the balance never moves on a refusal", async () => {
    await refused({ amount: "50.000001" }, "insufficient_balance");
    expect(await balanceOf(server, m.id)).toBe("50");
    const all = await withdraw(server, m, { amount: "50" });
    expect(all.answer.status).toBe(200);
    expect(await balanceOf(server, m.id)).toBe("0");
    await refused({ amount: "10" }, "insufficient_balance");
    await expectLedgerBalanced(server);
  });

  it("lets a refused request id succeed once the request is valid", async () => {
    const funded = await fundedMerchant(server, "20");
    const requestId = randomUUID();
    expectProblem(
      (await withdraw(server, funded, { amount: "30" }, { requestId })).answer,
      400,
      "insufficient_balance",
    );
    const ok = await withdraw(server, funded, { amount: "20" }, { requestId });
    expect(ok.answer.status).toBe(200);
    expect(ok.answer.body.request.id).toBe(requestId);
  });
});

describe("safe retries", () => {
  it("replays the original response byte for byte, with a fresh timestamp and signature, and no second debit", async () => {
    const m = await fundedMerchant(server, "100");
    const first = await withdraw(server, m, { amount: "10" });
    expect(first.answer.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const retry = await withdraw(
      server,
      m,
      { amount: "10" },
      { requestId: first.requestId, timestamp: nowSeconds(-200) },
    );
    expect(retry.signature).not.toBe(first.signature);
    expect(retry.answer.status).toBe(200);
    expect(retry.answer.text).toBe(first.answer.text);
    expect(await balanceOf(server, m.id)).toBe("90");
    expect(await movementCount(server, first.requestId, "debit")).toBe(1);
  });

  it("treats bodies equal after canonicalization as identical", async () => {
    const m = await fundedMerchant(server, "100");
    const first = await withdraw(server, m, { amount: "10" });
    const rawBody = `{"withdrawalMethodId": ${m.methodId}.0, "amount":"10", "currency":"\\u0055SDT"}`;
    const retry = await withdraw(
      server,
      m,
      {},
      { requestId: first.requestId, rawBody, signedBody: jcs(JSON.parse(rawBody)) },
    );
    expect(retry.answer.status).toBe(200);
    expect(retry.answer.text).toBe(first.answer.text);
    expect(await balanceOf(server, m.id)).toBe("90");
  });

  it("matches the request id case-insensitively and echoes it as first accepted", async () => {
    const m = await fundedMerchant(server, "100");
    const requestId = randomUUID().toUpperCase();
    const first = await withdraw(server, m, {}, { requestId });
    expect(first.answer.body.request.id).toBe(requestId);
    const lower = await withdraw(server, m, {}, { requestId: requestId.toLowerCase() });
    expect(lower.answer.status).toBe(200);
    expect(lower.answer.text).toBe(first.answer.text);
    expect(lower.answer.body.request.id).toBe(requestId);
    expect(await balanceOf(server, m.id)).toBe("90");
  });

  it("answers 409 for the same id with another body", async () => {
    const m = await fundedMerchant(server, "100");
    const first = await withdraw(server, m, { amount: "10" });
    for (const body of [{ amount: "11" }, { amount: 10 }, { amount: "10.0" }, { currency: "USDC" }]) {
      const reused = await withdraw(server, m, body, { requestId: first.requestId });
      expectProblem(reused.answer, 409, "request_id_reused");
    }
    expect(await balanceOf(server, m.id)).toBe("90");
  });

  it("answers another merchant's request id with a 409 that reveals nothing about it", async () => {
    const a = await fundedMerchant(server, "100");
    const b = await fundedMerchant(server, "100");
    const first = await withdraw(server, a, { amount: "10" });
    const sameBody = await withdraw(server, b, { amount: "10" }, { requestId: first.requestId });
    const otherBody = await withdraw(server, b, { amount: "77" }, { requestId: first.requestId.toUpperCase() });
    expectProblem(sameBody.answer, 409, "request_id_unavailable");
    expectProblem(otherBody.answer, 409, "request_id_unavailable");
    // Whatever b sends, the answer is the same text: nothing of a's operation shapes it.
    expect(otherBody.answer.text).toBe(sameBody.answer.text);
    expect(sameBody.answer.text).not.toContain(a.id);
    expect(sameBody.answer.text).not.toContain("10");
    expect(await balanceOf(server, b.id)).toBe("100");
  });

  it("keeps the original response after the payout moved on", async () => {
    const m = await fundedMerchant(server, "100");
    const first = await withdraw(server, m, { amount: "10" });
    expect(await payoutWorker(server).runOnce()).toBeGreaterThan(0);
    const retry = await withdraw(server, m, { amount: "10" }, { requestId: first.requestId });
    expect(retry.answer.text).toBe(first.answer.text);
  });
});

describe("unsigned use of the route", () => {
  it("is a 401 for a merchant key without signature headers", async () => {
    const m = await createMerchant(server);
    const answer = await fetch(`${server.baseUrl}/public/v1/withdrawals/create`, {
      method: "POST",
      headers: { "x-api-key": m.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ currency: "USDT", amount: "10", withdrawalMethodId: 1 }),
    });
    expect(answer.status).toBe(401);
    expect(((await answer.json()) as { code: string }).code).toBe("invalid_timestamp");
  });
});
