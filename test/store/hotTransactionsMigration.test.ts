// Migration 040 on a store with hot-wallet transactions in flight: payouts', nonce fills' and factory deployments' rows move into the one outbox once each, with their states, nonces and bytes; on PostgreSQL a process killed (SIGKILL) midway leaves the old tables whole, and the next start migrates them.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { type Kysely, sql } from "kysely";
import pg from "pg";
import { type Hex, keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hotTransactions } from "../../src/store/migrations/040_hot_transactions.ts";
import { usedNonces } from "../../src/store/nonceFills.ts";
import type { Database } from "../../src/store/schema.ts";
import { openStore } from "../../src/store/store.ts";
import { type MigrationDatabase, openMigrationDatabase } from "../support/migrationDatabase.ts";

const T0 = "2026-11-01T00:00:00.000Z";
const HOT = privateKeyToAccount(`0x${"11".repeat(32)}`);
const hot = HOT.address.toLowerCase();
let bare: MigrationDatabase;
/** The nonces the old tables hold, read before anything migrates. */
let before: number[] = [];

beforeAll(async () => {
  bare = await openMigrationDatabase();
  await bare.migrateTo("039_dispute_provider_amount");
  await seed(bare.db as unknown as Kysely<any>);
  before = await usedNoncesOf();
}, 60_000);

afterAll(async () => {
  await bare?.close();
});

async function signed(nonce: number, maxFeePerGas: bigint, to: Hex = HOT.address, value = 0n) {
  const raw = await HOT.signTransaction({
    type: "eip1559",
    chainId: 1,
    nonce,
    to,
    value,
    gas: 21_000n,
    maxFeePerGas,
    maxPriorityFeePerGas: 1n,
  });
  return { raw, hash: keccak256(raw) };
}

function payoutTx(
  id: string,
  requestId: string,
  nonce: number,
  state: string,
  tx: { raw: Hex; hash: Hex },
  replaces: string | null,
) {
  return {
    id,
    payout_request_id: requestId,
    network: "ethereum",
    chain_id: 1,
    from_address: hot,
    nonce,
    hash: tx.hash,
    raw: tx.raw,
    to_address: hot,
    asset_contract: null,
    recipient: hot,
    amount: "0",
    value_wei: "0",
    gas_limit: "21000",
    max_fee_per_gas: "10",
    max_priority_fee_per_gas: "1",
    replaces_id: replaces,
    state,
    broadcast_at: state === "signed" ? null : T0,
    broadcast_count: state === "signed" ? 0 : 1,
    last_error: null,
    block_number: state === "confirmed" ? "9" : null,
    block_hash: null,
    receipt_status: state === "confirmed" ? "success" : null,
    gas_used: state === "confirmed" ? "21000" : null,
    effective_gas_price: state === "confirmed" ? "7" : null,
    created_at: T0,
    updated_at: T0,
  };
}

/** What an upgraded store holds: a confirmed payout (nonce 4), a payout in flight replaced once (5), a fill (6) and a deployment (7) in flight. */
async function seed(db: Kysely<any>): Promise<void> {
  const rows = {
    p0: await signed(4, 10n),
    p1: await signed(5, 10n),
    p1b: await signed(5, 11n),
    fill: await signed(6, 10n),
    deployment: await signed(7, 10n, `0x${"4e".repeat(20)}`),
  };
  await db.connection().execute(async (conn) => {
    // The rows only: what they point at (payouts, the network) is not what this migration moves.
    if (bare.dialect === "postgres") await sql`SET session_replication_role = replica`.execute(conn);
    else bare.sqlite?.pragma("foreign_keys = OFF");
    await conn
      .insertInto("payout_transactions")
      .values([
        payoutTx("t0", "p0", 4, "confirmed", rows.p0, null),
        payoutTx("t1", "p1", 5, "broadcast", rows.p1, null),
        payoutTx("t1b", "p1", 5, "signed", rows.p1b, "t1"),
      ])
      .execute();
    const common = { network: "ethereum", from_address: hot, created_at: T0, updated_at: T0 };
    await conn
      .insertInto("nonce_fills")
      .values({
        id: "f1",
        ...common,
        nonce: 6,
        hash: rows.fill.hash,
        raw: rows.fill.raw,
        state: "signed",
        gas_cost: null,
        last_error: null,
      })
      .execute();
    await conn
      .insertInto("factory_deployments")
      .values({
        id: "d1",
        ...common,
        factory: `0x${"fa".repeat(20)}`,
        nonce: 7,
        hash: rows.deployment.hash,
        raw: rows.deployment.raw,
        state: "signed",
        gas_wei: null,
      })
      .execute();
    if (bare.dialect === "postgres") await sql`SET session_replication_role = origin`.execute(conn);
  });
}

/** Starts a process that opens the store (migrating it); answers its exit and what it printed. */
function migrateInChild(url: string) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", resolve(import.meta.dirname, "../support/migrateChild.ts"), url],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += String(chunk);
  });
  child.stderr.on("data", (chunk) => {
    output += String(chunk);
  });
  const exited = new Promise<{ code: number | null; signal: string | null; output: string }>((done) =>
    child.on("exit", (code, signal) => done({ code, signal, output })),
  );
  return { child, exited };
}

/** Bound on the polls for the child's migration to reach the held lock, one every POLL_MS. */
const MAX_POLLS = 1200;
const POLL_MS = 50;

describe("migration 040: the hot wallet's one outbox", () => {
  it("a process killed while it migrates leaves the old tables whole (PostgreSQL: the migration holds a lock midway)", async () => {
    if (bare.dialect !== "postgres") {
      // SQLite: killed after the migration's one transaction committed and before Kysely recorded it
      // (it records outside): the next start runs it again, and it must find its work done, not fail.
      await bare.db.transaction().execute((trx) => hotTransactions.up(trx as unknown as Kysely<any>));
      const applied = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(bare.db);
      expect(applied.rows.map((r) => r.name)).not.toContain("040_hot_transactions");
      return;
    }
    const holder = new pg.Client({ connectionString: bare.url });
    await holder.connect();
    try {
      // The migration copies the payouts' rows, then blocks on the deployments' table, which this holds.
      await holder.query("BEGIN");
      await holder.query("LOCK TABLE factory_deployments IN ACCESS EXCLUSIVE MODE");
      const { child, exited } = migrateInChild(bare.url);
      let waiting = false;
      let ended = false;
      void exited.then(() => {
        ended = true;
      });
      for (let poll = 0; poll < MAX_POLLS && !waiting && !ended; poll++) {
        if (poll > 0) await new Promise((next) => setTimeout(next, POLL_MS));
        // Inside a transaction the activity view is one snapshot: cleared, each poll sees the child anew.
        await holder.query("SELECT pg_stat_clear_snapshot()");
        const blocked = await holder.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
        );
        waiting = blocked.rows[0].n > 0;
      }
      expect(waiting).toBe(true);
      child.kill("SIGKILL");
      expect((await exited).signal).toBe("SIGKILL");
      await holder.query("ROLLBACK");
    } finally {
      await holder.end();
    }
    const applied = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(bare.db);
    expect(applied.rows.map((r) => r.name)).not.toContain("040_hot_transactions");
    const old = await (bare.db as unknown as Kysely<any>).selectFrom("payout_transactions").select("id").execute();
    expect(old.map((r) => r.id).sort()).toEqual(["t0", "t1", "t1b"]);
  });

  it("moves every in-flight and settled row once, with its state, nonce and bytes; the nonces held stay held", async () => {
    expect(before).toEqual([4, 5, 6, 7]);
    const store = await openStore(bare.url);
    try {
      const rows = await store.db.selectFrom("hot_transactions").selectAll().orderBy("nonce").orderBy("id").execute();
      expect(rows.map((r) => [r.id, r.purpose, r.purpose_id, Number(r.nonce), r.state, r.replaces_id])).toEqual([
        ["t0", "payout", "p0", 4, "confirmed", null],
        ["t1", "payout", "p1", 5, "broadcast", null],
        ["t1b", "payout", "p1", 5, "signed", "t1"],
        ["f1", "fill", "ethereum:6", 6, "signed", null],
        ["d1", "deployment", `0x${"fa".repeat(20)}`, 7, "signed", null],
      ]);
      // The call a replacement is signed from is read back from the bytes, exactly.
      expect(rows.find((r) => r.id === "t1b")).toMatchObject({
        max_fee_per_gas: "11",
        gas_limit: "21000",
        value_wei: "0",
      });
      expect(new Set(rows.map((r) => r.hash)).size).toBe(rows.length);
      const after = await store.transaction((tx) => usedNonces(tx, "ethereum", hot, 0, 100));
      expect([...after.nonces].sort()).toEqual(before);
      for (const table of ["payout_transactions", "nonce_fills", "factory_deployments"]) {
        await expect(sql`SELECT 1 FROM ${sql.table(table)}`.execute(store.db)).rejects.toThrow();
      }
    } finally {
      await store.close();
    }
  });
});

/** The nonces the old tables hold (every state but replaced), as the gap filler read them before. */
async function usedNoncesOf(): Promise<number[]> {
  const db = bare.db as unknown as Kysely<Database & Record<string, any>>;
  const nonces = new Set<number>();
  for (const table of ["payout_transactions", "nonce_fills", "factory_deployments"]) {
    const rows = await (db as Kysely<any>).selectFrom(table).select(["nonce", "state"]).execute();
    for (const r of rows) if (r.state !== "replaced") nonces.add(Number(r.nonce));
  }
  return [...nonces].sort();
}
