// Keyset pages of invoices (the dashboard's and the public list) against a plain in-memory model: every window, cursor and status, ties in created_at included.
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { INVOICE_STATUSES, type InvoiceStatus } from "../../src/domain/invoiceStatus.ts";
import { seedCatalog } from "../../src/store/currencies.ts";
import { listInvoices } from "../../src/store/invoices.ts";
import { insertMerchant } from "../../src/store/merchants.ts";
import { SecretBox } from "../../src/store/secrets.ts";
import { openStore, type Store } from "../../src/store/store.ts";
import { createTestDatabase, type TestDatabase } from "../support/server.ts";

let database: TestDatabase;
let store: Store;
let merchantId: string;
const rows: { id: string; createdAt: string; status: InvoiceStatus }[] = [];
/** Few distinct times, so many invoices share one (the id breaks the tie). */
const TIMES = Array.from({ length: 8 }, (_, i) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString());
const STATUSES: InvoiceStatus[] = ["completed", "failed", "pending"];

beforeAll(async () => {
  database = await createTestDatabase();
  store = await openStore(database.url);
  merchantId = await store.transaction(async (tx) => {
    await seedCatalog(tx);
    const profile = {
      merchantName: null,
      directorName: null,
      website: null,
      logo: null,
      whitelabeling: false,
      feePercent: "1",
      feesPaidBy: "merchant" as const,
    };
    const box = new SecretBox(randomBytes(32));
    const m = await insertMerchant(tx, box, { ...profile, email: "lists@example.com" }, TIMES[0] as string);
    const other = await insertMerchant(tx, box, { ...profile, email: "other@example.com" }, TIMES[0] as string);
    for (let i = 0; i < 60; i += 1) {
      const owner = i % 7 === 3 ? other.id : m.id;
      const row = {
        id: `inv-${randomBytes(4).toString("hex")}`,
        createdAt: TIMES[(i * 5) % TIMES.length] as string,
        status: STATUSES[(i * 3) % STATUSES.length] as InvoiceStatus,
      };
      if (owner === m.id) rows.push(row);
      await tx.db
        .insertInto("invoices")
        .values({
          id: row.id,
          merchant_id: owner,
          idempotency_key: null,
          request_hash: null,
          type: "b2c",
          status: row.status,
          currency: "USDT",
          settlement_currency: "USDT",
          convert_currency: null,
          amount: "1000000",
          final_amount: "1000000",
          merchant_fee: "10000",
          network_and_other_fees: "0",
          merchant_receive_amount: "990000",
          callback_url: null,
          success_url: null,
          return_url: null,
          fail_url: null,
          order_no: null,
          description: null,
          api_source: null,
          deposit_address: null,
          expires_at: null,
          created_at: row.createdAt,
          updated_at: row.createdAt,
        })
        .execute();
    }
    return m.id;
  });
  expect(INVOICE_STATUSES).toEqual(expect.arrayContaining(STATUSES));
});
afterAll(async () => {
  await store?.close();
  await database?.drop();
});

it("a page is exactly the model's next invoices for any window, cursor and status", async () => {
  const newestFirst = [...rows].sort((a, b) =>
    a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
  );
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        limit: fc.integer({ min: 1, max: 12 }),
        status: fc.option(fc.constantFrom(...STATUSES), { nil: undefined }),
        createdGte: fc.option(fc.constantFrom(...TIMES), { nil: undefined }),
        createdLt: fc.option(fc.constantFrom(...TIMES), { nil: undefined }),
        cursor: fc.option(fc.constantFrom(...rows), { nil: undefined }),
      }),
      async (w) => {
        const page = await listInvoices(store, merchantId, {
          limit: w.limit,
          status: w.status,
          createdGte: w.createdGte,
          createdLt: w.createdLt,
          startingAfter: w.cursor?.id,
        });
        if (!page.ok) throw new Error(page.error);
        const start = w.cursor ? newestFirst.indexOf(w.cursor) + 1 : 0;
        const matching = newestFirst
          .slice(start)
          .filter(
            (r) =>
              (w.status === undefined || r.status === w.status) &&
              (w.createdGte === undefined || r.createdAt >= w.createdGte) &&
              (w.createdLt === undefined || r.createdAt < w.createdLt),
          );
        expect(page.value.data.map((l) => l.invoice.id)).toEqual(matching.slice(0, w.limit).map((r) => r.id));
        expect(page.value.hasMore).toBe(matching.length > w.limit);
      },
    ),
    { numRuns: 150 },
  );
});
