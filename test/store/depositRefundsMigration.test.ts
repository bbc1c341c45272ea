// Migration 056 on a store with refunds and a claim: they stay as they were (an invoice's each), a refund now names exactly one subject (an invoice or a held deposit), a deposit has one live refund, and an invoice still one live full refund.
import { type Kysely, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MigrationDatabase, openMigrationDatabase } from "../support/migrationDatabase.ts";

const T0 = "2026-11-01T00:00:00.000Z";
let bare: MigrationDatabase;
const db = () => bare.db as unknown as Kysely<any>;

function refund(id: string, subject: { invoice_id: string | null; deposit_id?: string | null }, status = "processing") {
  return {
    request_id: id,
    merchant_id: "m1",
    ...subject,
    type: "crypto",
    currency: "USDT",
    amount: "1000",
    debit_currency: "USDT",
    debit_amount: "1000",
    to_address: null,
    withdraw_to_same_address: 0,
    reason: null,
    status,
    created_at: T0,
    partial: 0,
    paid_share: null,
    network_fee_paid_by: null,
  };
}

/** Inserts rows whose parents this test does not make (PostgreSQL: foreign keys off for the connection). */
async function withoutForeignKeys(work: (conn: Kysely<any>) => Promise<unknown>): Promise<void> {
  await db()
    .connection()
    .execute(async (conn) => {
      if (bare.dialect === "postgres") await sql`SET session_replication_role = replica`.execute(conn);
      try {
        await work(conn);
      } finally {
        if (bare.dialect === "postgres") await sql`SET session_replication_role = origin`.execute(conn);
      }
    });
}

const insertRefund = (row: ReturnType<typeof refund>) =>
  withoutForeignKeys((conn) => conn.insertInto("refunds").values(row).execute());

beforeAll(async () => {
  // SQLite without foreign keys: the seeded refund's request, merchant and invoice are not made here, and the rebuild copies it.
  bare = await openMigrationDatabase();
  bare.sqlite?.pragma("foreign_keys = OFF");
  await bare.migrateTo("049_deposit_screening");
  const { deposit_id: _none, ...before } = refund("r1", { invoice_id: "inv-1" });
  await withoutForeignKeys(async (conn) => {
    await conn.insertInto("refunds").values(before).execute();
    await conn
      .insertInto("refund_claims")
      .values({
        token: "tok-1",
        refund_id: "r1",
        merchant_id: "m1",
        status: "open",
        expires_at: T0,
        address: null,
        claimed_at: null,
        created_at: T0,
        updated_at: T0,
      })
      .execute();
  });
  await bare.migrateTo(null);
}, 60_000);

afterAll(async () => {
  await bare?.close();
});

describe("migration 056: deposit refunds", () => {
  it("keeps the invoices' refunds and their claims", async () => {
    const kept = await db().selectFrom("refunds").selectAll().execute();
    expect(kept.map((r) => [r.request_id, r.invoice_id, r.deposit_id, r.status, r.amount])).toEqual([
      ["r1", "inv-1", null, "processing", "1000"],
    ]);
    const claims = await db().selectFrom("refund_claims").select(["token", "refund_id"]).execute();
    expect(claims).toEqual([{ token: "tok-1", refund_id: "r1" }]);
  });

  it("refuses a refund with no subject or two", async () => {
    await expect(insertRefund(refund("r2", { invoice_id: null }))).rejects.toThrow(/check|constraint/i);
    await expect(insertRefund(refund("r3", { invoice_id: "inv-3", deposit_id: "dep-3" }))).rejects.toThrow(
      /check|constraint/i,
    );
  });

  it("holds one live refund per deposit, and one live full refund per invoice", async () => {
    await insertRefund(refund("r4", { invoice_id: null, deposit_id: "dep-4" }, "failed"));
    await insertRefund(refund("r5", { invoice_id: null, deposit_id: "dep-4" }));
    await expect(insertRefund(refund("r6", { invoice_id: null, deposit_id: "dep-4" }))).rejects.toThrow(
      /unique|duplicate/i,
    );
    await expect(insertRefund(refund("r7", { invoice_id: "inv-1" }))).rejects.toThrow(/unique|duplicate/i);
  });
});
