// Migration 011 on a store that already holds callbacks: deliveries and attempts survive the rebuild, each becomes an event of the list, payout events fit.
import type SQLite from "better-sqlite3";
import { type Kysely, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedCatalog } from "../../src/store/currencies.ts";
import type { Database } from "../../src/store/schema.ts";
import type { Tx } from "../../src/store/store.ts";
import {
  CATALOG_BEFORE_043,
  type MigrationDatabase,
  oldMerchantRow,
  openMigrationDatabase,
} from "../support/migrationDatabase.ts";
import { storeKind } from "../support/server.ts";

const dialect = storeKind();
let bare: MigrationDatabase;
let db: Kysely<Database>;
let sqlite: SQLite.Database | null = null;

const migrateTo = (target: string | null) => bare.migrateTo(target);

const T0 = "2026-01-01T00:00:00.000Z";

function callbackRow(id: string, invoiceId: string, status: string) {
  return {
    id,
    invoice_id: invoiceId,
    merchant_id: "m1",
    type: "invoice.completed",
    url: "https://shop.example/cb",
    destination: "shop.example",
    body: `{"type":"invoice.completed","id":"${id}"}`,
    status,
    attempt_count: status === "delivered" ? 1 : 0,
    schedule_position: 0,
    next_attempt_at: status === "pending" ? T0 : null,
    lease_until: null,
    claim_token: null,
    delivered_at: status === "delivered" ? T0 : null,
    created_at: T0,
    updated_at: T0,
  };
}

beforeAll(async () => {
  bare = await openMigrationDatabase({ foreignKeys: true });
  ({ db, sqlite } = bare);
  await migrateTo("010_dashboard");
  const tx: Tx = { db, dialect };
  await seedCatalog(tx, CATALOG_BEFORE_043);
  await db
    .insertInto("merchants")
    .values(oldMerchantRow("m1", "upgrade@example.com", T0))
    .execute();
  await db
    .insertInto("invoices")
    .values({
      id: "inv1",
      merchant_id: "m1",
      idempotency_key: null,
      request_hash: null,
      type: "b2c",
      status: "completed",
      currency: "USDT",
      settlement_currency: "USDT",
      convert_currency: null,
      amount: "1",
      final_amount: "1",
      merchant_fee: "0",
      network_and_other_fees: "0",
      merchant_receive_amount: "1",
      callback_url: "https://shop.example/cb",
      success_url: null,
      return_url: null,
      fail_url: null,
      order_no: null,
      description: null,
      api_source: null,
      deposit_address: null,
      expires_at: null,
      created_at: T0,
      updated_at: T0,
    })
    .execute();
  // Written through the pre-011 shape (no subject_id yet).
  await sql`insert into callback_events (id, invoice_id, merchant_id, type, url, destination, body, status,
      attempt_count, schedule_position, next_attempt_at, lease_until, claim_token, delivered_at, created_at, updated_at)
    select ${sql.join(Object.values(callbackRow("evt_a", "inv1", "delivered")))}`.execute(db);
  await sql`insert into callback_events (id, invoice_id, merchant_id, type, url, destination, body, status,
      attempt_count, schedule_position, next_attempt_at, lease_until, claim_token, delivered_at, created_at, updated_at)
    select ${sql.join(Object.values(callbackRow("evt_b", "inv1", "pending")))}`.execute(db);
  await db
    .insertInto("callback_attempts")
    .values({
      event_id: "evt_a",
      number: 1,
      started_at: T0,
      duration_ms: 3,
      status_code: 200,
      error: null,
      response_body: "ok",
    })
    .execute();
  await migrateTo(null);
});
afterAll(async () => {
  await bare?.close();
});

describe("migration 011 on a store with callbacks", () => {
  it("keeps every delivery, its order and its attempts, each ordered by its invoice", async () => {
    const rows = await db.selectFrom("callback_events").selectAll().orderBy("seq").execute();
    expect(rows.map((r) => [r.id, r.invoice_id, r.subject_id, r.status])).toEqual([
      ["evt_a", "inv1", "inv1", "delivered"],
      ["evt_b", "inv1", "inv1", "pending"],
    ]);
    expect(rows[0]!.seq).toBeLessThan(rows[1]!.seq);
    const attempts = await db.selectFrom("callback_attempts").selectAll().execute();
    expect(attempts.map((a) => [a.event_id, a.number, a.status_code])).toEqual([["evt_a", 1, 200]]);
    if (sqlite) {
      expect(sqlite.pragma("foreign_key_check")).toEqual([]);
      expect(sqlite.pragma("foreign_keys", { simple: true })).toBe(1);
    }
  });

  it("makes each recorded callback an event of the merchant's list, same id and bytes", async () => {
    const events = await db.selectFrom("events").selectAll().orderBy("id").execute();
    expect(events.map((e) => [e.id, e.merchant_id, e.type, e.subject_id, e.created_at])).toEqual([
      ["evt_a", "m1", "invoice.completed", "inv1", T0],
      ["evt_b", "m1", "invoice.completed", "inv1", T0],
    ]);
    expect(events[0]!.body).toBe(callbackRow("evt_a", "inv1", "delivered").body);
  });

  it("takes deliveries without an invoice, and still refuses one of an unknown invoice or event", async () => {
    await db
      .insertInto("callback_events")
      .values({ ...callbackRow("evt_w", "x", "pending"), invoice_id: null, subject_id: "some-request" })
      .execute();
    await expect(
      db
        .insertInto("callback_events")
        .values({ ...callbackRow("evt_x", "no-such-invoice", "pending"), subject_id: "no-such-invoice" })
        .execute(),
    ).rejects.toThrow(/foreign key/i);
    await expect(
      db
        .insertInto("callback_attempts")
        .values({
          event_id: "no-such-event",
          number: 1,
          started_at: T0,
          duration_ms: 1,
          status_code: null,
          error: "x",
          response_body: null,
        })
        .execute(),
    ).rejects.toThrow(/foreign key/i);
    const merchant = await db.selectFrom("merchants").select("default_callback_url").executeTakeFirstOrThrow();
    expect(merchant.default_callback_url).toBeNull();
  });
});
