// Withdrawals under concurrency: the balance never goes below zero and one request id is one operation, in one process or several.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { type ServiceProcess, spawnServiceLike } from "../support/process.ts";
import { startTestServer, storeKind, type TestServer } from "../support/server.ts";
import { nowSeconds } from "../support/signing.ts";
import {
  balanceOf,
  expectLedgerBalanced,
  type FundedMerchant,
  fundedMerchant,
  movementCount,
  withdraw,
} from "../support/withdrawals.ts";

const server = useTestServer();

/** Sends one withdrawal per base URL in turn, all at once. */
function withdrawEverywhere(
  targets: { baseUrl: string }[],
  m: FundedMerchant,
  count: number,
  requestIdOf: (i: number) => string,
) {
  return Promise.all(
    Array.from({ length: count }, (_, i) => {
      const target = targets[i % targets.length] ?? server;
      return withdraw({ ...server, baseUrl: target.baseUrl }, m, { amount: "10" }, { requestId: requestIdOf(i) });
    }),
  );
}

async function expectExactlyTenOf(targets: { baseUrl: string }[]): Promise<void> {
  const m = await fundedMerchant(server, "100");
  const calls = await withdrawEverywhere(targets, m, 20, () => randomUUID());
  const statuses = calls.map((c) => c.answer.status);
  expect(statuses.filter((s) => s === 200).length).toBe(10);
  for (const call of calls.filter((c) => c.answer.status !== 200)) {
    expect(call.answer.status).toBe(400);
    expect(call.answer.body.code).toBe("insufficient_balance");
  }
  expect(await balanceOf(server, m.id)).toBe("0");
  await expectLedgerBalanced(server);
}

async function expectOneOperation(targets: { baseUrl: string }[]): Promise<void> {
  const m = await fundedMerchant(server, "100");
  const requestId = randomUUID();
  const calls = await withdrawEverywhere(targets, m, 20, (i) => (i % 2 === 0 ? requestId : requestId.toUpperCase()));
  const ok = calls.filter((c) => c.answer.status === 200);
  expect(ok.length).toBeGreaterThanOrEqual(1);
  for (const call of calls.filter((c) => c.answer.status !== 200)) {
    expect(call.answer.status).toBe(409);
    expect(call.answer.body.code).toBe("request_in_progress");
  }
  // Every 200 is the one original response.
  expect(new Set(ok.map((c) => c.answer.text)).size).toBe(1);
  expect(await movementCount(server, requestId.toLowerCase(), "debit")).toBe(1);
  expect(await balanceOf(server, m.id)).toBe("90");
  // Once the dust settles, a retry is the original response.
  const retry = await withdraw(server, m, { amount: "10" }, { requestId, timestamp: nowSeconds() });
  expect(retry.answer.status).toBe(200);
  expect(retry.answer.text).toBe(ok[0]?.answer.text);
  await expectLedgerBalanced(server);
}

describe("one process", () => {
  it("accepts exactly ten of twenty parallel withdrawals of 10 from a balance of 100", async () => {
    await expectExactlyTenOf([server]);
  });

  it("answers the other merchant of a shared request id with a 409 that reveals nothing, even mid-flight", async () => {
    const a = await fundedMerchant(server, "1000");
    const b = await fundedMerchant(server, "1000");
    for (let round = 0; round < 10; round++) {
      const requestId = randomUUID();
      const calls = await Promise.all([
        withdraw(server, a, { amount: "10" }, { requestId }),
        withdraw(server, b, { amount: "10" }, { requestId }),
      ]);
      expect(calls.filter((c) => c.answer.status === 200)).toHaveLength(1);
      const loser = calls.find((c) => c.answer.status !== 200);
      expect(loser?.answer.status).toBe(409);
      expect(loser?.answer.body.code).toBe("request_id_unavailable");
    }
  });

  it("performs twenty parallel identical requests exactly once", async () => {
    await expectOneOperation([server]);
  });
});

if (storeKind() === "postgres") {
  describe("PostgreSQL: several service instances on one database", () => {
    let second: TestServer;
    let child: ServiceProcess;
    beforeAll(async () => {
      second = await startTestServer({ database: server.database });
      child = await spawnServiceLike(server, { SANDBOX_PAYOUT_DELAY_MS: "0" });
    }, 240_000);
    afterAll(async () => {
      await child?.stop();
      await second?.close();
    });

    it("accepts exactly ten of twenty, split across a second pool and a second process", async () => {
      await expectExactlyTenOf([server, second, child]);
    });

    it("performs parallel identical requests once, split across instances", async () => {
      await expectOneOperation([server, second, child]);
    });

    it("answers 409 while the request id is held by a running transaction, and proceeds after it", async () => {
      const m = await fundedMerchant(server, "100");
      const requestId = randomUUID();
      const holder = new pg.Client({ connectionString: server.database.url });
      await holder.connect();
      try {
        await holder.query("begin");
        // What claimSignedRequest takes for this id: a transaction-scoped advisory lock.
        await holder.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [`signed_request:${requestId}`]);
        const blocked = await withdraw(server, m, {}, { requestId });
        expect(blocked.answer.status).toBe(409);
        expect(blocked.answer.body.code).toBe("request_in_progress");
        await holder.query("rollback");
      } finally {
        await holder.end();
      }
      const after = await withdraw(second, m, {}, { requestId });
      expect(after.answer.status).toBe(200);
      expect(await balanceOf(server, m.id)).toBe("90");
    });
  });
}
