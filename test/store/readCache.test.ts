// The SQLite read cache: hits skip the statement, and every write, by any code path, invalidates exactly.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findInvoiceForMerchant, insertPayment } from "../../src/store/invoices.ts";
import { findApiKey, findMerchant } from "../../src/store/merchants.ts";
import { ReadCache } from "../../src/store/readCache.ts";
import { nowIso, openStore, type Store, sqlitePath } from "../../src/store/store.ts";
import { createMerchant, createTestDatabase, startTestServer, type TestServer } from "../support/server.ts";

let server: TestServer;
let bypass: Store;
beforeAll(async () => {
  // Always SQLite: the cache exists only for the embedded store, where one process does all writes.
  server = await startTestServer({ database: await createTestDatabase("sqlite") });
  // A second store on the same file writes through its own connection, past the first store's triggers:
  // what it changes shows whether a read came from the cache.
  bypass = await openStore(server.database.url);
});
afterAll(async () => {
  await bypass.close();
  await server.close();
});

const store = () => server.ctx.store;

async function renameBehindTheCache(merchantId: string, name: string): Promise<void> {
  await bypass.transaction((tx) =>
    tx.db.updateTable("merchants").set({ merchant_name: name }).where("id", "=", merchantId).execute(),
  );
}

describe("read cache", () => {
  it("answers a second read from the cache", async () => {
    const m = await createMerchant(server, { merchantName: "First" });
    expect((await findMerchant(store(), m.id))?.merchantName).toBe("First");
    await renameBehindTheCache(m.id, "Behind");
    expect((await findMerchant(store(), m.id))?.merchantName).toBe("First");
  });

  it("drops an entry on any write of its row, whatever statement made it", async () => {
    const m = await createMerchant(server, { merchantName: "Before" });
    await findMerchant(store(), m.id);
    // A plain query-builder update, not a repository function: the trigger still sees it.
    await store().transaction((tx) =>
      tx.db.updateTable("merchants").set({ merchant_name: "After" }).where("id", "=", m.id).execute(),
    );
    expect((await findMerchant(store(), m.id))?.merchantName).toBe("After");
  });

  it("never keeps a row read while a batch was changing it", async () => {
    const m = await createMerchant(server, { merchantName: "Old" });
    let readDuring: string | null | undefined;
    await store().transaction(async (tx) => {
      await tx.db.updateTable("merchants").set({ merchant_name: "New" }).where("id", "=", m.id).execute();
      // Outside the batch (query-only connection): the committed, old name; it must not be cached.
      readDuring = (await findMerchant(store(), m.id))?.merchantName;
    });
    expect(readDuring).toBe("Old");
    expect((await findMerchant(store(), m.id))?.merchantName).toBe("New");
  });

  it("keeps nothing of a change that rolled back", async () => {
    const m = await createMerchant(server, { merchantName: "Kept" });
    await findMerchant(store(), m.id);
    await expect(
      store().transaction(async (tx) => {
        await tx.db.updateTable("merchants").set({ merchant_name: "Lost" }).where("id", "=", m.id).execute();
        expect((await findMerchant(tx, m.id))?.merchantName).toBe("Lost");
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect((await findMerchant(store(), m.id))?.merchantName).toBe("Kept");
  });

  it("refuses a revoked API key at once", async () => {
    const m = await createMerchant(server);
    expect(await findApiKey(store(), m.apiKey)).not.toBeNull();
    await store().transaction((tx) =>
      tx.db.updateTable("api_keys").set({ revoked_at: nowIso() }).where("merchant_id", "=", m.id).execute(),
    );
    expect(await findApiKey(store(), m.apiKey)).toBeNull();
  });

  it("drops a cached invoice when a payment of it is recorded", async () => {
    const created = await fetch(`${server.baseUrl}/public/v1/invoices/create`, {
      method: "POST",
      headers: { "x-api-key": server.demo.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ currency: "USDT", amount: "10" }),
    });
    const invoiceId = ((await created.json()) as { id: string }).id;
    const before = await findInvoiceForMerchant(store(), server.demo.merchantId, invoiceId);
    expect(before?.payments).toHaveLength(0);
    await store().transaction((tx) =>
      insertPayment(
        tx,
        {
          invoiceId,
          txId: "0xcache",
          amountMinor: 1n,
          fromAddress: null,
          confirmed: false,
          amlStatus: "none",
          provider: null,
        },
        nowIso(),
      ),
    );
    expect((await findInvoiceForMerchant(store(), server.demo.merchantId, invoiceId))?.payments).toHaveLength(1);
    // Another merchant never gets it, cached or not.
    expect(await findInvoiceForMerchant(store(), "someone-else", invoiceId)).toBeNull();
  });

  it("freezes what it shares, and holds at most its bound per table", async () => {
    const m = await createMerchant(server);
    const merchant = await findMerchant(store(), m.id);
    expect(Object.isFrozen(merchant)).toBe(true);
    const { default: SQLite } = await import("better-sqlite3");
    const connection = new SQLite(sqlitePath(server.database.url));
    const small = new ReadCache(connection, 3);
    for (let i = 0; i < 5; i++) small.set("merchants", `m${i}`, { i }, small.ticket());
    expect(small.size("merchants")).toBe(3);
    expect(small.get("merchants", "m0")).toBeUndefined();
    expect(small.get("merchants", "m4")).toEqual({ i: 4 });
    connection.close();
  });
});

describe("read cache and whole-table changes", () => {
  it("fills no invoice while a batch that changed a currency is open", async () => {
    const created = await fetch(`${server.baseUrl}/public/v1/invoices/create`, {
      method: "POST",
      headers: { "x-api-key": server.demo.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ currency: "USDT", amount: "10", description: "before" }),
    });
    const invoiceId = ((await created.json()) as { id: string }).id;
    await findInvoiceForMerchant(store(), server.demo.merchantId, invoiceId);
    await store().transaction(async (tx) => {
      await tx.db.updateTable("currencies").set({ full_name: "Tether USD" }).where("ticker", "=", "USDT").execute();
      // Read while the batch is open: this fill must not be kept.
      await findInvoiceForMerchant(store(), server.demo.merchantId, invoiceId);
    });
    await bypass.transaction((tx) =>
      tx.db.updateTable("invoices").set({ description: "after" }).where("id", "=", invoiceId).execute(),
    );
    expect((await findInvoiceForMerchant(store(), server.demo.merchantId, invoiceId))?.invoice.description).toBe(
      "after",
    );
  });
});
