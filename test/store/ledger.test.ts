// The ledger on a real store: atomic movements, exactly-once causes, and no negative balance under concurrent writers.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { merchantAccount, movement, SYSTEM_ACCOUNTS, transfer } from "../../src/domain/ledger.ts";
import { auditLedger, merchantBalances, postMovement } from "../../src/store/ledger.ts";
import { nowIso, openStore, type Store } from "../../src/store/store.ts";
import { useTestServer } from "../support/fixture.ts";
import { createMerchant, storeKind } from "../support/server.ts";

/** Independent stores on the same database: separate connection pools, as separate processes would have. */
let others: Store[] = [];

const server = useTestServer();
beforeAll(async () => {
  if (storeKind() === "postgres") {
    others = await Promise.all([openStore(server.database.url), openStore(server.database.url)]);
  }
});
afterAll(async () => {
  await Promise.all(others.map((s) => s.close()));
});

function adjustment(merchantId: string, currency: string, amount: bigint, causeId = randomUUID()) {
  const account = merchantAccount(merchantId);
  return movement({
    cause: "adjustment",
    causeId,
    kind: "adjustment",
    memo: "test",
    postings:
      amount > 0n
        ? transfer(SYSTEM_ACCOUNTS.operatorAdjustments, account, currency, amount)
        : transfer(account, SYSTEM_ACCOUNTS.operatorAdjustments, currency, -amount),
  });
}

async function audit() {
  const result = await auditLedger(server.ctx.store);
  for (const [, sum] of result.sumsByCurrency) expect(sum).toBe(0n);
  expect(result.mismatchedBalances).toEqual([]);
  expect(result.negativeMerchantBalances).toEqual([]);
  return result;
}

describe("postMovement", () => {
  it("posts a cause once: a second posting of the same (cause, id, kind) changes nothing", async () => {
    const m = await createMerchant(server);
    const causeId = randomUUID();
    const first = await server.ctx.store.transaction((tx) =>
      postMovement(tx, adjustment(m.id, "USDT", 500n, causeId), nowIso()),
    );
    const second = await server.ctx.store.transaction((tx) =>
      postMovement(tx, adjustment(m.id, "USDT", 500n, causeId), nowIso()),
    );
    expect(first.ok).toBe(true);
    expect(second).toEqual({ ok: false, error: "already_posted" });
    expect((await merchantBalances(server.ctx.store, m.id)).get("USDT")).toBe(500n);
    await audit();
  });

  it("refuses a debit beyond the balance and writes nothing", async () => {
    const m = await createMerchant(server);
    await server.ctx.store.transaction((tx) => postMovement(tx, adjustment(m.id, "EUR", 100n), nowIso()));
    const before = await auditLedger(server.ctx.store);
    const refused = await server.ctx.store.transaction((tx) =>
      postMovement(tx, adjustment(m.id, "EUR", -101n), nowIso()),
    );
    expect(refused.ok).toBe(false);
    const after = await audit();
    expect(after.movements).toBe(before.movements);
    expect(after.entries).toBe(before.entries);
  });

  it("rolls back entries and balances when the surrounding transaction fails", async () => {
    const m = await createMerchant(server);
    await expect(
      server.ctx.store.transaction(async (tx) => {
        await postMovement(tx, adjustment(m.id, "USD", 700n), nowIso());
        throw new Error("later step failed");
      }),
    ).rejects.toThrow("later step failed");
    expect((await merchantBalances(server.ctx.store, m.id)).get("USD") ?? 0n).toBe(0n);
    await audit();
  });

  it("refuses (throws) an unbalanced movement before touching the store", () => {
    expect(() =>
      movement({
        cause: "adjustment",
        causeId: "x",
        kind: "adjustment",
        memo: null,
        postings: [
          { account: merchantAccount("m"), currency: "USDT", amount: 5n },
          { account: SYSTEM_ACCOUNTS.operatorAdjustments, currency: "USDT", amount: -4n },
        ],
      }),
    ).toThrow(/invariant violated/);
  });

  it("keeps the database check as a last line of defence against a negative merchant balance", async () => {
    const m = await createMerchant(server);
    await expect(
      server.ctx.store.transaction((tx) =>
        tx.db
          .insertInto("ledger_balances")
          .values({ account: merchantAccount(m.id), currency: "ETH", balance: "-1", updated_at: nowIso() })
          .execute(),
      ),
    ).rejects.toThrow(/check/i);
  });
});

describe("concurrent writers", () => {
  it("never takes a balance below zero when many debits race", async () => {
    const m = await createMerchant(server);
    await server.ctx.store.transaction((tx) => postMovement(tx, adjustment(m.id, "USDT", 200n), nowIso()));
    // 60 debits of 10 against a balance of 200, spread over every store (connection pool) we have.
    const stores = [server.ctx.store, ...others];
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const store = stores[i % stores.length]!;
        return store.transaction((tx) => postMovement(tx, adjustment(m.id, "USDT", -10n), nowIso()));
      }),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(20);
    expect(results.filter((r) => !r.ok).every((r) => !r.ok && r.error === "insufficient_balance")).toBe(true);
    expect((await merchantBalances(server.ctx.store, m.id)).get("USDT")).toBe(0n);
    await audit();
  });

  it("keeps credits and debits of many accounts consistent under contention", async () => {
    const merchants = await Promise.all([createMerchant(server), createMerchant(server), createMerchant(server)]);
    const stores = [server.ctx.store, ...others];
    await Promise.all(
      merchants.map((m) =>
        server.ctx.store.transaction((tx) => postMovement(tx, adjustment(m.id, "EUR", 1000n), nowIso())),
      ),
    );
    const work = Array.from({ length: 90 }, (_, i) => {
      const m = merchants[i % 3]!;
      const amount = i % 2 === 0 ? -70n : 30n;
      return stores[i % stores.length]!.transaction((tx) =>
        postMovement(tx, adjustment(m.id, "EUR", amount), nowIso()),
      );
    });
    const results = await Promise.all(work);
    for (const [index, m] of merchants.entries()) {
      let expected = 1000n;
      results.forEach((r, i) => {
        if (i % 3 === index && r.ok) expected += i % 2 === 0 ? -70n : 30n;
      });
      const balance = (await merchantBalances(server.ctx.store, m.id)).get("EUR") ?? 0n;
      expect(balance).toBe(expected);
      expect(balance >= 0n).toBe(true);
    }
    await audit();
  });
});
