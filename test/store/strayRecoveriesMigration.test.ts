// Migration 057 on a store with a stray payment: it stays as it was (an invoice's, in a catalog entry), and a stray now names exactly one deposit address (an invoice's or a customer's).
import { type Kysely, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MigrationDatabase, openMigrationDatabase } from "../support/migrationDatabase.ts";

const T0 = "2026-11-01T00:00:00.000Z";
let bare: MigrationDatabase;
const db = () => bare.db as unknown as Kysely<any>;

const stray = {
  network: "ethereum",
  tx_id: "0xabc:1",
  invoice_id: "inv-1",
  currency: "USDT",
  amount: "1000",
  from_address: "0x00000000000000000000000000000000000000aa",
  block_number: 7,
  block_hash: "0xdef",
  created_at: T0,
};

/** Inserts rows whose parents this test does not make (PostgreSQL: foreign keys off for the connection). */
async function withoutForeignKeys(work: (conn: Kysely<any>) => Promise<unknown>): Promise<unknown> {
  return db()
    .connection()
    .execute(async (conn) => {
      if (bare.dialect === "postgres") await sql`SET session_replication_role = replica`.execute(conn);
      try {
        return await work(conn);
      } finally {
        if (bare.dialect === "postgres") await sql`SET session_replication_role = origin`.execute(conn);
      }
    });
}

beforeAll(async () => {
  // SQLite without foreign keys: the stray's invoice and entry are not made here, and the rebuild copies it.
  bare = await openMigrationDatabase();
  bare.sqlite?.pragma("foreign_keys = OFF");
  await bare.migrateTo("056_deposit_refunds");
  await withoutForeignKeys((conn) => conn.insertInto("stray_payments").values(stray).execute());
  await bare.migrateTo(null);
}, 60_000);

afterAll(async () => {
  await bare?.close();
});

describe("migration 057: stray recoveries", () => {
  it("keeps the stray payments, each at exactly one deposit address", async () => {
    const kept = await db().selectFrom("stray_payments").selectAll().execute();
    expect(kept.map((r) => ({ ...r, block_number: Number(r.block_number) }))).toEqual([
      { ...stray, deposit_address_id: null, token: null },
    ]);
    const neither = { ...stray, tx_id: "0xabc:2", invoice_id: null, currency: null, token: "0x01" };
    await expect(
      withoutForeignKeys((conn) => conn.insertInto("stray_payments").values(neither).execute()),
    ).rejects.toThrow();
    expect(await db().selectFrom("stray_recoveries").selectAll().execute()).toEqual([]);
  });
});
