// Cached keys, merchants and withdrawals: a revoked key stops working at once here and within the stated bound on every other process; on PostgreSQL a withdrawal is one statement.
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { newRowId } from "../../src/domain/ids.ts";
import { merchantAccount, nextBalance } from "../../src/domain/ledger.ts";
import { entriesOf, findCurrency } from "../../src/store/currencies.ts";
import { findInvoiceForMerchant, type Invoice, insertInvoiceInBatch } from "../../src/store/invoices.ts";
import { findWithdrawalMethod } from "../../src/store/merchants.ts";
import { debitMovement } from "../../src/store/payouts.ts";
import { hashToken } from "../../src/store/secrets.ts";
import { SHARED_CACHE_TTL_MS } from "../../src/store/sharedCache.ts";
import { acceptWithdrawalInOneStatement } from "../../src/store/withdrawals.ts";
import { useTestServer } from "../support/fixture.ts";
import { type ServiceProcess, spawnServiceLike } from "../support/process.ts";
import { admin, merchant, storeKind } from "../support/server.ts";
import { balanceOf, expectLedgerBalanced, fundedMerchant, withdraw } from "../support/withdrawals.ts";

/** How long a change made through one process may take to show on another before the test fails: many times the cache's TTL. */
const WAIT_MS = 15 * SHARED_CACHE_TTL_MS;

const server = useTestServer();

async function meStatus(baseUrl: string, apiKey: string): Promise<number> {
  return (await merchant({ ...server, baseUrl }, apiKey, "GET", "/public/v1/me")).status;
}

/**
 * A cached withdrawal's statements: the one that accepts it (which itself leaves a withdrawal under
 * a payout policy, product §31, to the ordinary path: a policy binds at once in every process).
 */
const WITHDRAWAL_STATEMENTS = 1;

describe("one process", () => {
  it("refuses a revoked key at once, though it was just used (and cached)", async () => {
    const m = await fundedMerchant(server, "100");
    expect(await meStatus(server.baseUrl, m.apiKey)).toBe(200);
    expect(await meStatus(server.baseUrl, m.apiKey)).toBe(200);
    expect((await admin(server, "POST", "/api-keys/revoke", { apiKey: m.apiKey })).status).toBe(200);
    expect(await meStatus(server.baseUrl, m.apiKey)).toBe(401);
  });

  it("refuses a withdrawal at once when the merchant was just suspended", async () => {
    const m = await fundedMerchant(server, "100");
    expect((await withdraw(server, m)).answer.status).toBe(200);
    expect((await admin(server, "PATCH", `/merchants/${m.id}`, { status: "suspended" })).status).toBe(200);
    const refused = await withdraw(server, m);
    expect(refused.answer.status).toBe(400);
    expect(refused.answer.body.code).toBe("merchant_not_active");
  });
});

if (storeKind() === "postgres") {
  describe("PostgreSQL: another process on the same database", () => {
    let child: ServiceProcess;
    beforeAll(async () => {
      child = await spawnServiceLike(server, { SANDBOX_PAYOUT_DELAY_MS: "0" });
    }, 240_000);
    afterAll(async () => {
      await child?.stop();
    });

    // The waits are bounded by a generous deadline, not by the TTL: on a loaded machine a request alone may take longer than the TTL.
    it("stops accepting a key revoked by another process", async () => {
      const m = await fundedMerchant(server, "100");
      // Used on the other process, so its cache holds the key.
      for (let i = 0; i < 3; i++) expect(await meStatus(child.baseUrl, m.apiKey)).toBe(200);
      expect((await admin(server, "POST", "/api-keys/revoke", { apiKey: m.apiKey })).status).toBe(200);
      const deadline = Date.now() + WAIT_MS;
      let status = await meStatus(child.baseUrl, m.apiKey);
      while (status === 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        status = await meStatus(child.baseUrl, m.apiKey);
      }
      expect(status).toBe(401);
    });

    it("answers an invoice paid through another process with its new status at once", async () => {
      const m = await fundedMerchant(server, "100");
      const created = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
        currency: "USDT",
        amount: 5,
      });
      const path = `/public/v1/invoices/${created.body.id}`;
      const onChild = () => merchant({ ...server, baseUrl: child.baseUrl }, m.apiKey, "GET", path);
      for (let i = 0; i < 3; i++) expect((await onChild()).body.status).toBe("pending");
      const paid = await merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${created.body.id}/payments`, {});
      expect(paid.status).toBe(200);
      const deadline = Date.now() + WAIT_MS;
      let status = (await onChild()).body.status;
      while (status === "pending" && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        status = (await onChild()).body.status;
      }
      expect(status).not.toBe("pending");
    });

    it("refuses a withdrawal on another process once the merchant is suspended", async () => {
      const m = await fundedMerchant(server, "100");
      expect((await withdraw({ ...server, baseUrl: child.baseUrl }, m)).answer.status).toBe(200);
      expect((await admin(server, "PATCH", `/merchants/${m.id}`, { status: "suspended" })).status).toBe(200);
      const deadline = Date.now() + WAIT_MS;
      let refused = await withdraw({ ...server, baseUrl: child.baseUrl }, m);
      while (refused.answer.status === 200 && Date.now() < deadline) {
        refused = await withdraw({ ...server, baseUrl: child.baseUrl }, m);
      }
      expect(refused.answer.body.code).toBe("merchant_not_active");
    });
  });

  describe("PostgreSQL: a withdrawal in one statement", () => {
    // Its own server, whose cached rows outlive the test: on a loaded machine the default TTL could
    // expire them between the filling requests and the counted one, and a statement is then read again.
    const steady = useTestServer({ store: { sharedCacheTtlMs: 10 * 60_000 } });

    it("shows a currency's entry added by another process at once, not after the cache's TTL", async () => {
      const before = await entriesOf(steady.ctx.store, "USDT");
      expect((await entriesOf(steady.ctx.store, "USDT")).map((e) => e.ticker)).toEqual(before.map((e) => e.ticker));
      const ticker = `USDT_N${randomUUID().slice(0, 6).toUpperCase()}`;
      const other = new pg.Client({ connectionString: steady.database.url });
      other.on("error", () => {});
      await other.connect();
      try {
        // Another process's plain insert of a new entry of USDT (a copy of its first entry).
        await other.query(
          `insert into currencies
             select (jsonb_populate_record(null::currencies, to_jsonb(c) ||
               jsonb_build_object('ticker', $1::text, 'internal_ticker', $1::text, 'symbol', 'USDT', 'sort_order', 9999))).*
             from currencies c where ticker = 'USDT'`,
          [ticker],
        );
        // The cached group lives 10 minutes here: only the insert's notice can drop it in time.
        const deadline = Date.now() + 5000;
        let tickers = (await entriesOf(steady.ctx.store, "USDT")).map((e) => e.ticker);
        while (!tickers.includes(ticker) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          tickers = (await entriesOf(steady.ctx.store, "USDT")).map((e) => e.ticker);
        }
        expect(tickers).toContain(ticker);
      } finally {
        await other.query("delete from currencies where ticker = $1", [ticker]);
        await other.end();
      }
    });

    it("sends one statement, and the payout policy's lookup, for a withdrawal whose key, merchant, method and currency are cached", async () => {
      const m = await fundedMerchant(steady, "100");
      // The first notes the key's use (a write, once a minute, that drops cached keys); the second fills the caches.
      for (let i = 0; i < 2; i++) {
        expect((await withdraw(steady, m)).answer.status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const query = vi.spyOn(pg.Client.prototype, "query");
      try {
        const call = await withdraw(steady, m);
        expect(call.answer.status).toBe(200);
        expect(query).toHaveBeenCalledTimes(WITHDRAWAL_STATEMENTS);
      } finally {
        query.mockRestore();
      }
      expect(await balanceOf(steady, m.id)).toBe("70");
      await expectLedgerBalanced(steady);
    });

    it("keeps a cached key when only its last-used time is written, here or by another process", async () => {
      const m = await fundedMerchant(steady, "100");
      for (let i = 0; i < 2; i++) {
        expect((await withdraw(steady, m)).answer.status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const keyHash = hashToken(m.apiKey);
      const now = new Date().toISOString();
      // This process's write (the statement touchApiKey sends), then another connection's.
      await steady.ctx.store.transaction((tx) =>
        tx.db.updateTable("api_keys").set({ last_used_at: now }).where("key_hash", "=", keyHash).execute(),
      );
      const other = new pg.Client({ connectionString: steady.database.url });
      other.on("error", () => {});
      await other.connect();
      try {
        await other.query("update api_keys set last_used_at = $1 where key_hash = $2", [now, keyHash]);
      } finally {
        await other.end();
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      const query = vi.spyOn(pg.Client.prototype, "query");
      try {
        expect((await withdraw(steady, m)).answer.status).toBe(200);
        expect(query).toHaveBeenCalledTimes(WITHDRAWAL_STATEMENTS);
      } finally {
        query.mockRestore();
      }
    });

    it("answers GetInvoice of a cached invoice without a statement, and CreateInvoice with one", async () => {
      const m = await fundedMerchant(steady, "100");
      const body = { currency: "USDT", amount: "25.5", order_no: "o-1" };
      const created = await merchant(steady, m.apiKey, "POST", "/public/v1/invoices/create", body);
      expect(created.status).toBe(200);
      const path = `/public/v1/invoices/${created.body.id}`;
      for (let i = 0; i < 2; i++) {
        expect((await merchant(steady, m.apiKey, "GET", path)).status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const query = vi.spyOn(pg.Client.prototype, "query");
      try {
        const read = await merchant(steady, m.apiKey, "GET", path);
        expect(read.status).toBe(200);
        expect(read.body.id).toBe(created.body.id);
        expect(query).toHaveBeenCalledTimes(0);
        expect((await merchant(steady, m.apiKey, "POST", "/public/v1/invoices/create", body)).status).toBe(200);
        expect(query).toHaveBeenCalledTimes(1);
      } finally {
        query.mockRestore();
      }
    });

    it("inserts concurrent new invoices in fewer statements than invoices, each readable", async () => {
      const m = await fundedMerchant(steady, "100");
      const body = { currency: "USDT", amount: "25.5", order_no: "batch" };
      expect((await merchant(steady, m.apiKey, "POST", "/public/v1/invoices/create", body)).status).toBe(200);
      const query = vi.spyOn(pg.Client.prototype, "query");
      let created: { status: number; body: any }[];
      try {
        created = await Promise.all(
          Array.from({ length: 16 }, () => merchant(steady, m.apiKey, "POST", "/public/v1/invoices/create", body)),
        );
        expect(created.map((c) => c.status)).toEqual(created.map(() => 200));
        // One statement per invoice before group commits; now the invoices that arrive while one is in flight go together.
        expect(query.mock.calls.length).toBeLessThan(created.length);
      } finally {
        query.mockRestore();
      }
      expect(new Set(created.map((c) => c.body.id)).size).toBe(created.length);
      for (const c of created) {
        const read = await findInvoiceForMerchant(steady.ctx.store, m.id, c.body.id);
        expect(read?.invoice.orderNo).toBe("batch");
      }
    });

    /** Copies of a new invoice of a funded merchant, each with its own id (and another merchant's id where given). */
    async function invoiceCopies(): Promise<{ like: (merchantId?: string) => Invoice }> {
      const m = await fundedMerchant(steady, "100");
      const made = await merchant(steady, m.apiKey, "POST", "/public/v1/invoices/create", {
        currency: "USDT",
        amount: 3,
      });
      const original = await findInvoiceForMerchant(steady.ctx.store, m.id, made.body.id);
      if (!original) throw new Error("the invoice was created");
      return { like: (merchantId = m.id) => ({ ...original.invoice, id: newRowId(), merchantId }) };
    }

    /** Which of `invoices` the database holds, sorted by id. */
    async function storedOf(invoices: readonly Invoice[]): Promise<string[]> {
      const ids = invoices.map((i) => i.id);
      const rows = await steady.ctx.store.db.selectFrom("invoices").select("id").where("id", "in", ids).execute();
      return rows.map((r) => r.id).sort();
    }

    it("fails only the invoice a constraint refuses when its batch fails, inserting the others", async () => {
      const { like } = await invoiceCopies();
      // The first goes alone; the next three wait for it and go together, one of them for no merchant.
      const invoices = [like(), like(), like("no-such-merchant"), like()];
      const outcomes = await Promise.allSettled(invoices.map((i) => insertInvoiceInBatch(steady.ctx.store, i)));
      expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
      expect(await storedOf(invoices)).toEqual([invoices[0], invoices[1], invoices[3]].map((i) => i?.id).sort());
    });

    it("answers each invoice of a batch whose connection was lost with the store's error, inserting none alone", async () => {
      const { like } = await invoiceCopies();
      const store = steady.ctx.store;
      // The batch statement loses its connection (it may have committed): PostgreSQL's admin shutdown.
      const lost = Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
      const db = new Proxy(store.db, {
        get(target, key) {
          if (key === "executeQuery") {
            return (query: { sql: string }) =>
              query.sql.includes("jsonb_populate_recordset")
                ? Promise.reject(lost)
                : target.executeQuery(query as never);
          }
          // Kysely's own fields are private: its methods run on the real instance.
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      // A handle of its own: its own batches (statementBatches.ts keys them by handle).
      const lossy = Object.create(store, { db: { value: db } }) as typeof store;
      const invoices = Array.from({ length: 4 }, () => like());
      // The first goes alone; the next three wait for it and go together, and their statement is lost.
      const outcomes = await Promise.allSettled(invoices.map((i) => insertInvoiceInBatch(lossy, i)));
      expect(
        outcomes.map((o) => (o.status === "rejected" ? (o.reason as { code?: string }).code : "inserted")),
      ).toEqual(["inserted", "57P01", "57P01", "57P01"]);
      // Not inserted again one by one: a batch that did commit would otherwise have its invoices twice.
      expect(await storedOf(invoices)).toEqual([invoices[0]?.id]);
    });

    it("answers stale, writing nothing, when a fact the caller decided on is not what the database holds", async () => {
      const m = await fundedMerchant(steady, "100");
      const currency = await findCurrency(steady.ctx.store, "USDT");
      if (!currency) throw new Error("USDT is in the catalog");
      const requestKey = randomUUID();
      const outcome = await acceptWithdrawalInOneStatement(steady.ctx.store, {
        ...oneStatementWithdrawal(m.id, m.methodId, requestKey, 10_000_000n, currency),
        destination: "0xnot-the-method-address",
      });
      expect(outcome.kind).toBe("stale");
      expect(await balanceOf(steady, m.id)).toBe("100");
    });

    it("answers stale, writing nothing, when the method was disabled or is in its cooling-off", async () => {
      const m = await fundedMerchant(steady, "100");
      const currency = await findCurrency(steady.ctx.store, "USDT");
      if (!currency) throw new Error("USDT is in the catalog");
      const method = await findWithdrawalMethod(steady.ctx.store, m.methodId);
      if (!method) throw new Error("the method exists");
      const later = new Date(Date.now() + 3_600_000).toISOString();
      for (const change of [
        { disabled_at: new Date().toISOString(), usable_from: null },
        { disabled_at: null, usable_from: later },
      ]) {
        await steady.ctx.store.db.updateTable("withdrawal_methods").set(change).where("id", "=", m.methodId).execute();
        const outcome = await acceptWithdrawalInOneStatement(steady.ctx.store, {
          ...oneStatementWithdrawal(m.id, m.methodId, randomUUID(), 10_000_000n, currency),
          destination: method.address,
        });
        expect(outcome.kind).toBe("stale");
        expect(await balanceOf(steady, m.id)).toBe("100");
      }
    });

    it("refuses exactly what the ledger's rule refuses, writing nothing then", async () => {
      const m = await fundedMerchant(steady, "0");
      const currency = await findCurrency(steady.ctx.store, "USDT");
      if (!currency) throw new Error("USDT is in the catalog");
      const method = await findWithdrawalMethod(steady.ctx.store, m.methodId);
      if (!method) throw new Error("the method exists");
      const account = merchantAccount(m.id);
      await steady.ctx.store.db
        .insertInto("ledger_balances")
        .values({ account, currency: "USDT", balance: "0", updated_at: new Date().toISOString() })
        .execute();
      await fc.assert(
        fc.asyncProperty(
          fc.bigInt({ min: 0n, max: 10n ** 30n }),
          fc.bigInt({ min: 1n, max: 10n ** 30n }),
          async (balance, amount) => {
            await steady.ctx.store.db
              .updateTable("ledger_balances")
              .set({ balance: balance.toString() })
              .where("account", "=", account)
              .where("currency", "=", "USDT")
              .execute();
            const outcome = await acceptWithdrawalInOneStatement(steady.ctx.store, {
              ...oneStatementWithdrawal(m.id, m.methodId, randomUUID(), amount, currency),
              destination: method.address,
            });
            const expected = nextBalance(account, balance, -amount);
            expect(outcome.kind).toBe(expected.ok ? "accepted" : "insufficient_balance");
            const stored = await steady.ctx.store.db
              .selectFrom("ledger_balances")
              .select("balance")
              .where("account", "=", account)
              .where("currency", "=", "USDT")
              .executeTakeFirstOrThrow();
            expect(stored.balance).toBe((expected.ok ? expected.value : balance).toString());
          },
        ),
        { numRuns: 40 },
      );
      // The balance was set by hand: the ledger's audit cannot hold after this test, the file's last.
    });
  });
}

/** What the route passes accept_withdrawal for a withdrawal of `amount` minor units. */
function oneStatementWithdrawal(
  merchantId: string,
  methodId: number,
  requestKey: string,
  amount: bigint,
  currency: NonNullable<Awaited<ReturnType<typeof findCurrency>>>,
) {
  const now = new Date().toISOString();
  return {
    signed: {
      requestKey,
      requestIdSent: requestKey,
      merchantId,
      route: "/public/v1/withdrawals/create",
      bodyHash: "test",
    },
    withdrawal: {
      requestKey,
      merchantId,
      withdrawalMethodId: methodId,
      currency: "USDT",
      amountMinor: amount,
      createdAt: now,
    },
    destination: "",
    currency,
    movement: debitMovement({
      requestKey,
      operation: "withdrawal",
      merchantId,
      cause: "withdrawal",
      debit: { currency: "USDT", amount },
      payout: { currency: "USDT", amount, destination: "" },
      memo: "test",
    }),
    response: "{}",
  };
}
