// Migration 048 on a store with flush deposits: they stay as they were (an invoice payment each), a flush deposit now names exactly one source (a payment or a customer's deposit), and a customer has one address per currency.
import { type Kysely, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MigrationDatabase, openMigrationDatabase } from "../support/migrationDatabase.ts";

const T0 = "2026-11-01T00:00:00.000Z";
let bare: MigrationDatabase;
const db = () => bare.db as unknown as Kysely<any>;

function flushDeposit(id: string, source: { payment_id: string | null; deposit_id?: string | null }) {
  return {
    id,
    invoice_id: null,
    ...source,
    network: "ethereum",
    forwarder_id: `0x${"0".repeat(63)}1`,
    deposit_address: `0x${"de".repeat(20)}`,
    factory: `0x${"fa".repeat(20)}`,
    currency: "USDT",
    token: null,
    amount: "1000",
    state: "waiting",
    flush_id: null,
    outcome: null,
    flushed_amount: null,
    gas_share: "0",
    attempts: 0,
    next_attempt_at: T0,
    last_error: null,
    created_at: T0,
    updated_at: T0,
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

beforeAll(async () => {
  // SQLite without foreign keys: the seeded flush deposit's payment and invoice are not made here, and the rebuild copies it.
  bare = await openMigrationDatabase();
  bare.sqlite?.pragma("foreign_keys = OFF");
  await bare.migrateTo("044_subscriptions");
  await withoutForeignKeys((conn) =>
    conn
      .insertInto("flush_deposits")
      .values({ ...flushDeposit("d1", { payment_id: "pay-1" }), invoice_id: "inv-1" })
      .execute(),
  );
  await bare.migrateTo(null);
}, 60_000);

afterAll(async () => {
  await bare?.close();
});

describe("migration 048: deposit addresses", () => {
  it("keeps the flush deposits of invoice payments, and refuses one with no source or two", async () => {
    const kept = await db().selectFrom("flush_deposits").selectAll().execute();
    expect(kept.map((r) => [r.id, r.payment_id, r.invoice_id, r.deposit_id])).toEqual([["d1", "pay-1", "inv-1", null]]);
    for (const source of [{ payment_id: null }, { payment_id: "pay-2", deposit_id: "dep-2" }]) {
      await expect(
        withoutForeignKeys((conn) => conn.insertInto("flush_deposits").values(flushDeposit("d2", source)).execute()),
      ).rejects.toThrow(/check|constraint/i);
    }
    await withoutForeignKeys((conn) =>
      conn
        .insertInto("flush_deposits")
        .values(flushDeposit("d3", { payment_id: null, deposit_id: "dep-3" }))
        .execute(),
    );
  });

  it("has one address per merchant, customer and currency", async () => {
    const row = (id: string, currency: string) => ({
      id,
      merchant_id: "m1",
      customer: "c1",
      currency,
      address: `0x${id.padStart(40, "0")}`,
      forwarder_id: `0x${"0".repeat(64)}`,
      factory: `0x${"fa".repeat(20)}`,
      callback_url: null,
      active: 1,
      created_at: T0,
      updated_at: T0,
    });
    await withoutForeignKeys((conn) =>
      conn
        .insertInto("deposit_addresses")
        .values([row("a1", "USDT"), row("a2", "ETH")])
        .execute(),
    );
    await expect(
      withoutForeignKeys((conn) => conn.insertInto("deposit_addresses").values(row("a3", "USDT")).execute()),
    ).rejects.toThrow(/unique|duplicate/i);
  });
});
