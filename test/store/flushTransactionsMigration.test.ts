// Migration 041 on a store with flushes open and settled: each flush's transactions move into the hot wallet's outbox once (purpose `flush`, chained at its nonce, with the flush's state), the flushes table keeps what the flush owns, its deposits still point at it, and the nonces held stay held.
import { type Kysely, sql } from "kysely";
import { type Hex, keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flushTransactions } from "../../src/store/migrations/041_flush_transactions.ts";
import { usedNonces } from "../../src/store/nonceFills.ts";
import { openStore } from "../../src/store/store.ts";
import { type MigrationDatabase, openMigrationDatabase } from "../support/migrationDatabase.ts";

const T0 = "2026-11-01T00:00:00.000Z";
const T1 = "2026-11-01T00:05:00.000Z";
const HOT = privateKeyToAccount(`0x${"22".repeat(32)}`);
const hot = HOT.address.toLowerCase();
const FACTORY = `0x${"fa".repeat(20)}` as Hex;
const DATA = "0x1234abcd" as Hex;
let bare: MigrationDatabase;
/** The signed bytes of each flush's transactions, by name. */
const raws: Record<string, Hex> = {};
/** The nonces the flushes held before the migration. */
let before: number[] = [];

beforeAll(async () => {
  // Foreign keys enforced on SQLite as the store's connection does: the rebuilt table must keep its deposits' references.
  bare = await openMigrationDatabase({ foreignKeys: true });
  await bare.migrateTo("040_hot_transactions");
  await seed(bare.db as unknown as Kysely<any>);
  // As the gap filler read them before: a flush held its nonce unless dropped.
  const held = await (bare.db as unknown as Kysely<any>)
    .selectFrom("flushes")
    .select("nonce")
    .where("state", "!=", "dropped")
    .execute();
  before = held.map((f) => Number(f.nonce)).sort((a, b) => a - b);
}, 60_000);

afterAll(async () => {
  await bare?.close();
});

function sign(nonce: number, maxFeePerGas: bigint): Promise<Hex> {
  return HOT.signTransaction({
    type: "eip1559",
    chainId: 1,
    nonce,
    to: FACTORY,
    value: 0n,
    data: DATA,
    gas: 90_000n,
    maxFeePerGas,
    maxPriorityFeePerGas: 1n,
  });
}

function flushRow(id: string, nonce: number, state: string, current: Hex, replaced: Hex[]) {
  const settled = state === "completed" || state === "reverted";
  return {
    id,
    network: "ethereum",
    nonce,
    from_address: hot,
    factory: FACTORY,
    signed_raw: current,
    tx_hash: keccak256(current),
    replaced: JSON.stringify(replaced),
    state,
    gas_limit: "90000",
    max_fee_per_gas: "10",
    max_priority_fee_per_gas: "1",
    gas_used: settled ? "50000" : null,
    gas_cost: settled ? "350000" : null,
    attempts: 1,
    signed_at: T0,
    resigned_at: replaced.length > 0 ? T1 : T0,
    next_attempt_at: T1,
    last_error: state === "dropped" ? "nonce used" : null,
    created_at: T0,
    updated_at: T1,
  };
}

function depositRow(id: string, flushId: string, state: string) {
  return {
    id,
    payment_id: `pay-${id}`,
    invoice_id: `inv-${id}`,
    network: "ethereum",
    forwarder_id: `0x${"0".repeat(63)}1`,
    deposit_address: `0x${"de".repeat(20)}`,
    factory: FACTORY,
    currency: "USDT",
    token: null,
    amount: "1000",
    state,
    flush_id: flushId,
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

/** A row in `table` with `id`, every other NOT NULL column without a default given a placeholder (foreign keys off). */
function placeholderRow(sqlite: NonNullable<MigrationDatabase["sqlite"]>, table: string, id: string): void {
  const columns = sqlite.pragma(`table_info(${table})`) as {
    name: string;
    type: string;
    notnull: number;
    dflt_value: unknown;
  }[];
  const required = columns.filter((c) => c.name !== "id" && c.notnull === 1 && c.dflt_value === null);
  const names = ["id", ...required.map((c) => c.name)];
  const values = [id, ...required.map((c) => (/int/i.test(c.type) ? 0 : `${c.name}-${id}`))];
  sqlite
    .prepare(`insert into ${table} (${names.join(", ")}) values (${names.map(() => "?").join(", ")})`)
    .run(...values);
}

function placeholderRows(sqlite: NonNullable<MigrationDatabase["sqlite"]>, deposit: string): void {
  placeholderRow(sqlite, "invoices", `inv-${deposit}`);
  placeholderRow(sqlite, "invoice_payments", `pay-${deposit}`);
}

/**
 * An open flush replaced once (nonce 10), a completed one whose first transaction was the one
 * mined (11: settled, it kept that one as current), a reverted one (12), a dropped one replaced
 * once (13); deposits in the open and the completed ones.
 */
async function seed(db: Kysely<any>): Promise<void> {
  for (const [name, nonce, fee] of [
    ["open0", 10, 10n],
    ["open1", 10, 11n],
    ["done0", 11, 10n],
    ["done1", 11, 11n],
    ["reverted", 12, 10n],
    ["dropped0", 13, 10n],
    ["dropped1", 13, 11n],
  ] as const) {
    raws[name] = await sign(nonce, fee);
  }
  const r = raws as Record<string, Hex>;
  await db.connection().execute(async (conn) => {
    // The rows only: the payments and invoices the deposits point at are not what this migration moves.
    if (bare.dialect === "postgres") await sql`SET session_replication_role = replica`.execute(conn);
    else bare.sqlite?.pragma("foreign_keys = OFF");
    await conn
      .insertInto("flushes")
      .values([
        flushRow("fs", 10, "signed", r.open1 as Hex, [r.open0 as Hex]),
        flushRow("fc", 11, "completed", r.done0 as Hex, [r.done0 as Hex]),
        flushRow("fr", 12, "reverted", r.reverted as Hex, []),
        flushRow("fd", 13, "dropped", r.dropped1 as Hex, [r.dropped0 as Hex]),
      ])
      .execute();
    await conn
      .insertInto("flush_deposits")
      .values([depositRow("d1", "fs", "flushing"), depositRow("d2", "fc", "flushed")])
      .execute();
    // Later migrations rebuild flush_deposits on SQLite (048), which checks its references again:
    // the invoices and payments the deposits point at exist, as they always do outside this seed.
    if (bare.sqlite) for (const id of ["d1", "d2"]) placeholderRows(bare.sqlite, id);
    if (bare.dialect === "postgres") await sql`SET session_replication_role = origin`.execute(conn);
    else bare.sqlite?.pragma("foreign_keys = ON");
  });
}

describe("migration 041: flushes' transactions in the outbox", () => {
  it("moves every flush's transactions once, chained at its nonce with the flush's state; the flushes keep their own columns", async () => {
    expect(before).toEqual([10, 11, 12]);
    const store = await openStore(bare.url);
    try {
      const rows = await store.db
        .selectFrom("hot_transactions")
        .selectAll()
        .where("purpose", "=", "flush")
        .orderBy("nonce")
        .orderBy("id")
        .execute();
      const r = raws as Record<string, Hex>;
      expect(rows.map((t) => [t.purpose_id, Number(t.nonce), t.raw, t.state])).toEqual([
        ["fs", 10, r.open0, "signed"],
        ["fs", 10, r.open1, "signed"],
        ["fc", 11, r.done0, "confirmed"],
        ["fr", 12, r.reverted, "reverted"],
        ["fd", 13, r.dropped0, "replaced"],
        ["fd", 13, r.dropped1, "replaced"],
      ]);
      // Chained: each replacement names the one it replaces.
      expect(rows.map((t) => t.replaces_id)).toEqual([null, rows[0]?.id, null, null, null, rows[4]?.id]);
      // The call a replacement is signed from, read back from the bytes; the hash is the bytes'.
      expect(rows[1]).toMatchObject({
        to_address: FACTORY,
        data: DATA,
        value_wei: "0",
        gas_limit: "90000",
        max_fee_per_gas: "11",
        max_priority_fee_per_gas: "1",
        chain_id: 1,
        from_address: hot,
        hash: keccak256(r.open1 as Hex),
      });
      // The replacement delay runs from the current transaction's signing.
      expect([rows[0]?.created_at, rows[1]?.created_at]).toEqual([T0, T1]);
      expect(rows[2]).toMatchObject({ receipt_status: "success", gas_used: "50000", effective_gas_price: "7" });
      const flushes = await store.db.selectFrom("flushes").selectAll().orderBy("id").execute();
      expect(flushes.map((f) => [f.id, f.state, f.gas_cost])).toEqual([
        ["fc", "completed", "350000"],
        ["fd", "dropped", null],
        ["fr", "reverted", "350000"],
        ["fs", "signed", null],
      ]);
      expect(Object.keys(flushes[0] ?? {}).sort()).toEqual(
        ["created_at", "factory", "gas_cost", "gas_used", "id", "last_error", "network", "state", "updated_at"].sort(),
      );
      const deposits = await store.db.selectFrom("flush_deposits").select(["id", "flush_id"]).orderBy("id").execute();
      expect(deposits).toEqual([
        { id: "d1", flush_id: "fs" },
        { id: "d2", flush_id: "fc" },
      ]);
      // The nonces held stay held: the outbox's rows cover what the flushes' did.
      const after = await store.transaction((tx) => usedNonces(tx, "ethereum", hot, 0, 100));
      expect([...after.nonces].sort((a, b) => a - b)).toEqual(before);
      // Run again (SQLite records a migration outside its transaction: a kill in between runs it twice): nothing moves twice.
      await store.db.transaction().execute((trx) => flushTransactions(bare.dialect).up(trx as unknown as Kysely<any>));
      const again = await store.db.selectFrom("hot_transactions").select("id").where("purpose", "=", "flush").execute();
      expect(again.length).toBe(rows.length);
    } finally {
      await store.close();
    }
  });
});
