// Payout repository: claims never overlap across stores, and a failed payout's reversal mirrors its debit, converted or not.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  acceptPayout,
  claimPayouts,
  duePayoutChecks,
  expireLeases,
  findPayout,
  type Payout,
  renewBatchLease,
  settlePayout,
} from "../../src/store/payouts.ts";
import { takeQueuedPayout } from "../../src/store/payoutTransactions.ts";
import { claimSignedRequest, completeSignedRequest } from "../../src/store/signedRequests.ts";
import { nowIso, openStore, type Store, type Tx } from "../../src/store/store.ts";
import { insertWithdrawal } from "../../src/store/withdrawals.ts";
import { startTestServer, storeKind, type TestServer } from "../support/server.ts";
import { balanceOf, expectLedgerBalanced, fundedMerchant, movementCount, withdraw } from "../support/withdrawals.ts";

let server: TestServer;
let other: Store;
beforeAll(async () => {
  server = await startTestServer();
  // A second pool (PostgreSQL) or connection (SQLite) on the same database: another worker process.
  other = await openStore(server.database.url);
});
afterAll(async () => {
  await other.close();
  await server.close();
});

describe("claimPayouts", () => {
  it("hands each queued payout to exactly one of many concurrent claimers", async () => {
    const m = await fundedMerchant(server, "1000");
    const accepted = await Promise.all(Array.from({ length: 40 }, () => withdraw(server, m)));
    expect(accepted.every((a) => a.answer.status === 200)).toBe(true);
    const wanted = new Set(accepted.map((a) => a.requestId));

    const claims: string[] = [];
    // Bounded: each round claims at least one payout until none is left.
    for (let round = 0; round < 40; round++) {
      const now = nowIso();
      const lease = new Date(Date.now() + 60_000).toISOString();
      const batches = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 === 0 ? server.ctx.store : other).transaction((tx) =>
            claimPayouts(tx, { now, leaseUntil: lease, limit: 3, processor: "test" }),
          ),
        ),
      );
      const claimed = batches.flat().map((p: Payout) => p.requestKey);
      claims.push(...claimed);
      if (claimed.length === 0) break;
    }
    const mine = claims.filter((key) => wanted.has(key));
    expect(mine.length).toBe(40);
    expect(new Set(mine).size).toBe(40);
    for (const key of wanted) {
      expect(await findPayout(server.ctx.store, key)).toMatchObject({ state: "sending", attempts: 1 });
    }
  });
});

/**
 * SQLite's query plans for the statements `run` prepares on a fresh store's writing connection,
 * savepoints left out: each plan's details joined by " | ".
 */
async function sqlitePlans(run: (tx: Tx) => Promise<unknown>): Promise<{ source: string; plan: string }[]> {
  const fresh = await openStore(server.database.url);
  try {
    return await fresh.transaction(async (tx) => {
      const connection = tx.sqlite;
      if (!connection) throw new Error("a SQLite transaction has its connection");
      const prepared: string[] = [];
      const prepare = connection.prepare;
      connection.prepare = ((source: string) => {
        prepared.push(source);
        return prepare.call(connection, source);
      }) as typeof connection.prepare;
      try {
        await run(tx);
      } finally {
        connection.prepare = prepare;
      }
      return prepared
        .filter((source) => !/^(savepoint|release|rollback)/.test(source))
        .map((source) => ({
          source,
          plan: connection
            .prepare(`explain query plan ${source}`)
            .all(Array.from({ length: (source.match(/\?/g) ?? []).length }, () => null))
            .map((row) => (row as { detail: string }).detail)
            .join(" | "),
        }));
    });
  } finally {
    await fresh.close();
  }
}

if (storeKind() === "sqlite") {
  describe("claimPayouts on SQLite", () => {
    it("finds the claimed payouts by their ids, not by reading every queued payout", async () => {
      const plans = await sqlitePlans((tx) =>
        claimPayouts(tx, { now: nowIso(), leaseUntil: nowIso(), limit: 3, processor: "test" }),
      );
      const claim = plans.find(({ source }) => source.startsWith("update") && source.includes("payouts"));
      if (!claim) throw new Error(`the claim was not prepared: ${plans.map((p) => p.source).join(" | ")}`);
      expect(claim.plan).toMatch(/USING INDEX sqlite_autoindex_payouts_1 \(request_id=\?\)/);
    });
  });
}

if (storeKind() === "sqlite") {
  describe("the worker's lease and check queries on SQLite", () => {
    // Each must read its partial index (migration 006_write_path_indexes), which holds only the
    // payouts in the state it looks for: a full scan, or the (state, created_at) index, would read
    // every payout ever made.
    const cases: [string, (tx: Tx) => Promise<unknown>, RegExp][] = [
      [
        "expireLeases",
        (tx) => expireLeases(tx, nowIso(), 5),
        /USING INDEX payouts_sending_lease \(state=\? AND lease_until<\?\)/,
      ],
      // Either index reads only the payouts being sent.
      ["renewBatchLease", (tx) => renewBatchLease(tx, "token", nowIso()), /USING INDEX payouts_s\w+ \(state=\?\)/],
      [
        "duePayoutChecks",
        (tx) => duePayoutChecks(tx, nowIso(), 5),
        /USING INDEX payouts_sent_check \(state=\? AND next_check_at>\? AND next_check_at<\?\)/,
      ],
    ];
    for (const [name, run, expected] of cases) {
      it(`${name} reads only its partial index`, async () => {
        const plans = (await sqlitePlans(run))
          .filter(({ source }) => source.includes("payouts"))
          .map(({ plan }) => plan);
        expect(plans.length).toBeGreaterThan(0);
        expect(plans.join(" || ")).toMatch(expected);
        expect(plans.join(" || ")).not.toMatch(/SCAN payouts(?! USING)/);
      });
    }
  });
}

describe("acceptPayout and the reversal of a failed payout", () => {
  async function accept(
    merchantId: string,
    methodId: number,
    debit: { currency: string; amount: bigint },
    payout: { currency: string; amount: bigint },
  ) {
    const requestKey = randomUUID();
    await server.ctx.store.transaction(async (tx) => {
      const now = nowIso();
      const claim = await claimSignedRequest(
        tx,
        { requestKey, requestIdSent: requestKey, merchantId, route: "/test", bodyHash: "h" },
        now,
      );
      expect(claim.kind).toBe("claimed");
      const result = await acceptPayout(
        tx,
        {
          requestKey,
          operation: "withdrawal",
          merchantId,
          cause: "refund",
          debit,
          payout: { ...payout, destination: "0xabc" },
          memo: "test",
        },
        now,
      );
      expect(result.ok).toBe(true);
      // The operation the payout carries out: its settlement reports it (the withdrawal.* event).
      await insertWithdrawal(tx, {
        requestKey,
        merchantId,
        withdrawalMethodId: methodId,
        currency: debit.currency,
        amountMinor: debit.amount,
        createdAt: now,
      });
      await completeSignedRequest(tx, requestKey, { status: 200, body: "{}" }, now);
    });
    return requestKey;
  }

  it("debits in one currency and pays out in another through the conversion desk, and reverses both legs", async () => {
    const m = await fundedMerchant(server, "100", "EUR");
    const key = await accept(
      m.id,
      m.methodId,
      { currency: "EUR", amount: 5000n },
      { currency: "USDT", amount: 54_000_000n },
    );
    expect(await balanceOf(server, m.id, "EUR")).toBe("50");
    await expectLedgerBalanced(server);
    const failed = await server.ctx.store.transaction((tx) =>
      settlePayout(
        tx,
        key,
        { outcome: "failed", processorStatus: "x", processorTxId: null },
        nowIso(),
        server.config.publicBaseUrl,
      ),
    );
    expect(failed.ok).toBe(true);
    expect(await balanceOf(server, m.id, "EUR")).toBe("100");
    expect(await movementCount(server, key, "reversal")).toBe(1);
    const legs = await server.ctx.store.db
      .selectFrom("ledger_entries")
      .innerJoin("ledger_movements", "ledger_movements.id", "ledger_entries.movement_id")
      .select(["ledger_movements.kind", "ledger_entries.account", "ledger_entries.currency", "ledger_entries.amount"])
      .where("ledger_movements.cause_id", "=", key)
      .execute();
    const debit = legs.filter((l) => l.kind === "debit");
    const reversal = legs.filter((l) => l.kind === "reversal");
    expect(debit.length).toBe(4);
    expect(reversal.map((l) => `${l.account} ${l.currency} ${-BigInt(l.amount)}`).sort()).toEqual(
      debit.map((l) => `${l.account} ${l.currency} ${BigInt(l.amount)}`).sort(),
    );
    await expectLedgerBalanced(server);
  });

  it("refuses a debit the balance does not cover, leaving no payout", async () => {
    const m = await fundedMerchant(server, "10");
    const requestKey = randomUUID();
    const refused = await server.ctx.store.transaction(async (tx) => {
      await claimSignedRequest(
        tx,
        { requestKey, requestIdSent: requestKey, merchantId: m.id, route: "/t", bodyHash: "h" },
        nowIso(),
      );
      return acceptPayout(
        tx,
        {
          requestKey,
          operation: "withdrawal",
          merchantId: m.id,
          cause: "withdrawal",
          debit: { currency: "USDT", amount: 10_000_001n },
          payout: { currency: "USDT", amount: 10_000_001n, destination: "0x" },
          memo: "too much",
        },
        nowIso(),
      );
    });
    expect(refused).toMatchObject({ ok: false, error: "insufficient_balance" });
    expect(await findPayout(server.ctx.store, requestKey)).toBeNull();
    expect(await balanceOf(server, m.id)).toBe("10");
  });

  it("settles once even when two settlements race", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m, { amount: "50" });
    // SQLite serves one process through one connection; PostgreSQL also races a second pool.
    const stores = storeKind() === "postgres" ? [server.ctx.store, other] : [server.ctx.store];
    const results = await Promise.all(
      [0, 1, 2, 3]
        .map((i) => stores[i % stores.length] as Store)
        .map((store) =>
          store.transaction((tx) =>
            settlePayout(
              tx,
              requestId,
              { outcome: "failed", processorStatus: "x", processorTxId: null },
              nowIso(),
              server.config.publicBaseUrl,
            ),
          ),
        ),
    );
    expect(results.filter((r) => r.ok).length).toBe(1);
    expect(results.filter((r) => !r.ok).map((r) => (r.ok ? "" : r.error))).toEqual([
      "payout_already_settled",
      "payout_already_settled",
      "payout_already_settled",
    ]);
    expect(await balanceOf(server, m.id)).toBe("100");
    expect(await movementCount(server, requestId, "reversal")).toBe(1);
    await expectLedgerBalanced(server);
  });

  it("settles nothing for a settler whose read is stale: a payout taken meanwhile is not failed", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m, { amount: "50" });
    // Another process signed its transaction and took it (queued -> sent) after this settler read it queued.
    const taken = await server.ctx.store.transaction((tx) => takeQueuedPayout(tx, requestId, "0xabc", nowIso()));
    expect(taken).toBe(true);
    const stale = await server.ctx.store.transaction((tx) =>
      settlePayout(
        tx,
        requestId,
        { outcome: "failed", processorStatus: "rejected", processorTxId: null },
        nowIso(),
        server.config.publicBaseUrl,
        { state: "queued" },
      ),
    );
    expect(stale).toEqual({ ok: false, error: "claim_lost" });
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({ state: "sent" });
    expect(await balanceOf(server, m.id)).toBe("50");
    expect(await movementCount(server, requestId, "reversal")).toBe(0);
    await expectLedgerBalanced(server);
  });
});
