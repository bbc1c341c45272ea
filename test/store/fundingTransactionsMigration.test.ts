// Migration 042 on a store with sweeps' gas fundings in flight and settled: each sweep's signed fundings move into the hot wallet's outbox once (purpose `funding`), chained at their nonce with the states their sweeps imply; the nonces held stay held, the sweeps lose their funding columns, and a second run finds its work done.
import { type Kysely, sql } from "kysely";
import { type Hex, keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fundingTransactions } from "../../src/store/migrations/042_funding_transactions.ts";
import { nonceOverview, usedNonces } from "../../src/store/nonceFills.ts";
import { openStore } from "../../src/store/store.ts";
import { type MigrationDatabase, openMigrationDatabase } from "../support/migrationDatabase.ts";

const T0 = "2026-11-01T00:00:00.000Z";
const T1 = "2026-11-01T00:05:00.000Z";
const HOT = privateKeyToAccount(`0x${"22".repeat(32)}`);
const DEPOSIT = `0x${"de".repeat(20)}` as Hex;
let bare: MigrationDatabase;
/** The signed fundings seeded, by name. */
const raw: Record<string, Hex> = {};

beforeAll(async () => {
  bare = await openMigrationDatabase();
  await bare.migrateTo("040_hot_transactions");
  await seed(bare.db as unknown as Kysely<any>);
}, 60_000);

afterAll(async () => {
  await bare?.close();
});

/** A legacy funding as the sweeper signed them: gas price, a plain transfer to the deposit address. */
async function funding(nonce: number, gasPrice: bigint): Promise<Hex> {
  return HOT.signTransaction({ type: "legacy", chainId: 1, nonce, to: DEPOSIT, value: 5000n, gas: 21_000n, gasPrice });
}

function sweep(id: string, state: string, f: Partial<Record<string, string | number | null>>) {
  return {
    id,
    payment_id: `pay-${id}`,
    invoice_id: `inv-${id}`,
    network: "ethereum",
    currency: "USDT",
    deposit_index: 1,
    deposit_address: DEPOSIT,
    amount: "10",
    swept_amount: null,
    state,
    funding_tx: f.funding_signed ? keccak256(f.funding_signed as Hex) : null,
    funding_signed: null,
    funding_amount: f.funding_signed ? "5000" : null,
    funding_nonce: null,
    funding_signed_at: null,
    funding_resigned_at: null,
    funding_replaced: null,
    sweep_tx: null,
    sweep_signed: null,
    gas_cost: null,
    attempts: 0,
    next_attempt_at: T0,
    last_error: null,
    created_at: T0,
    updated_at: T1,
    ...f,
  };
}

/**
 * s1 `funding`, replaced once at nonce 10; s2 `sweeping`, its replacement mined at 11; s3
 * `completed`, its first funding mined at 12 (kept as current and in the replaced list), signed
 * before migration 022 (no stored nonce); s4 `pending` after its transfer reverted, funded at 13;
 * s5 `pending`, never funded.
 */
async function seed(db: Kysely<any>): Promise<void> {
  Object.assign(raw, {
    a: await funding(10, 10n),
    b: await funding(10, 11n),
    c: await funding(11, 10n),
    d: await funding(11, 11n),
    e: await funding(12, 10n),
    f: await funding(13, 10n),
  });
  const rows = [
    sweep("s1", "funding", {
      funding_signed: raw.b ?? null,
      funding_nonce: 10,
      funding_signed_at: T0,
      funding_resigned_at: T1,
      funding_replaced: JSON.stringify([raw.a]),
    }),
    sweep("s2", "sweeping", {
      funding_signed: raw.d ?? null,
      funding_nonce: 11,
      funding_replaced: JSON.stringify([raw.c]),
    }),
    sweep("s3", "completed", { funding_signed: raw.e ?? null, funding_replaced: JSON.stringify([raw.e]) }),
    sweep("s4", "pending", { funding_signed: raw.f ?? null, funding_nonce: 13, funding_signed_at: T0 }),
    sweep("s5", "pending", {}),
  ];
  await db.connection().execute(async (conn) => {
    // The sweeps only: the payments they point at are not what this migration moves.
    if (bare.dialect === "postgres") await sql`SET session_replication_role = replica`.execute(conn);
    else bare.sqlite?.pragma("foreign_keys = OFF");
    await conn.insertInto("sweeps").values(rows).execute();
    if (bare.dialect === "postgres") await sql`SET session_replication_role = origin`.execute(conn);
  });
}

describe("migration 042: the sweeps' gas fundings move into the outbox", () => {
  it("moves each funding once, chained at its nonce, with the state its sweep implies; a second run finds its work done", async () => {
    // Run once unrecorded (as a process killed before Kysely recorded it): the store's run must then skip it.
    await bare.db.transaction().execute((trx) => fundingTransactions.up(trx as unknown as Kysely<any>));
    const store = await openStore(bare.url);
    try {
      const rows = await store.db
        .selectFrom("hot_transactions")
        .selectAll()
        .where("purpose", "=", "funding")
        .orderBy("nonce")
        .orderBy("created_at")
        .execute();
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(
        rows.map((r) => [
          r.purpose_id,
          Number(r.nonce),
          r.hash,
          r.state,
          r.replaces_id === null ? null : byId.get(r.replaces_id)?.hash,
        ]),
      ).toEqual([
        ["s1", 10, keccak256(raw.a as Hex), "signed", null],
        ["s1", 10, keccak256(raw.b as Hex), "signed", keccak256(raw.a as Hex)],
        ["s2", 11, keccak256(raw.c as Hex), "replaced", null],
        ["s2", 11, keccak256(raw.d as Hex), "confirmed", keccak256(raw.c as Hex)],
        ["s3", 12, keccak256(raw.e as Hex), "confirmed", null],
        ["s4", 13, keccak256(raw.f as Hex), "confirmed", null],
      ]);
      // What a replacement is signed from is read back from the bytes; the sender from the signature.
      expect(rows[1]).toMatchObject({
        from_address: HOT.address.toLowerCase(),
        chain_id: 1,
        to_address: DEPOSIT.toLowerCase(),
        value_wei: "5000",
        gas_limit: "21000",
        max_fee_per_gas: "11",
        max_priority_fee_per_gas: "11",
        token_amount: "0",
        raw: raw.b,
      });
      // Its age is its nonce's first signing; the current one is overdue from its own.
      expect([rows[0]?.created_at, rows[1]?.created_at]).toEqual([T0, T1]);
      // Every nonce a funding held is held still: no nonce fill will take it.
      const used = await store.transaction((tx) => usedNonces(tx, "ethereum", HOT.address, 0, 100));
      expect([...used.nonces].sort()).toEqual([10, 11, 12, 13]);
      const overview = await store.transaction((tx) => nonceOverview(tx, "ethereum"));
      expect([overview.unminedNonces, overview.oldestUnminedSince]).toEqual([1, T0]);
      const sweeps = await store.db.selectFrom("sweeps").select(["id", "state"]).orderBy("id").execute();
      expect(sweeps.map((s) => s.state)).toEqual(["funding", "sweeping", "completed", "pending", "pending"]);
      for (const column of ["funding_signed", "funding_tx", "funding_nonce", "funding_replaced", "funding_amount"]) {
        await expect(sql`SELECT ${sql.ref(column)} FROM sweeps`.execute(store.db)).rejects.toThrow();
      }
    } finally {
      await store.close();
    }
  });
});
