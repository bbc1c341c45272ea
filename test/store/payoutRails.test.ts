// Payout rails (migration 028): rows in flight keep the rail that carries them, queued ones get the rule's rail from the worker, and each claim takes only its rail.
import SQLite from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedCatalog } from "../../src/store/currencies.ts";
import { assignPayoutRails, claimPayouts, findPayout } from "../../src/store/payouts.ts";
import type { Database } from "../../src/store/schema.ts";
import { migrations, sqlitePath, type Tx } from "../../src/store/store.ts";
import { CATALOG_BEFORE_043 } from "../support/migrationDatabase.ts";
import { createTestDatabase, startTestServer, storeKind, type TestDatabase } from "../support/server.ts";
import { fundedMerchant, payoutWorker, withdraw } from "../support/withdrawals.ts";

const dialect = storeKind();
let database: TestDatabase;
let db: Kysely<Database>;
const T0 = "2026-01-01T00:00:00.000Z";
const LATER = "2026-01-01T01:00:00.000Z";

async function migrateTo(target: string | null): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(dialect) } });
  const { error } = target === null ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
  if (error) throw error;
}

async function insertPayout(key: string, state: string, processor: string | null): Promise<void> {
  await db
    .insertInto("signed_requests")
    .values({
      request_id: key,
      request_id_sent: key,
      merchant_id: "m1",
      route: "/public/v1/withdrawals/create",
      body_hash: "h",
      state: "completed",
      response_status: 200,
      response_body: "{}",
      created_at: T0,
      updated_at: T0,
    })
    .execute();
  await db
    .insertInto("payouts")
    .values({
      request_id: key,
      operation: "withdrawal",
      merchant_id: "m1",
      currency: "USDT",
      amount: "100",
      destination: "0xabc",
      ledger_cause: "withdrawal",
      state,
      processor,
      processor_status: null,
      processor_tx_id: null,
      claim_token: state === "sending" ? "token" : null,
      lease_until: state === "sending" ? LATER : null,
      attempts: state === "queued" ? 0 : 1,
      next_check_at: null,
      last_error: null,
      created_at: T0,
      updated_at: T0,
      state_changed_at: T0,
      settled_at: state === "completed" ? T0 : null,
    })
    .execute();
}

describe("migration 028 on a store that holds payouts", () => {
  beforeAll(async () => {
    database = await createTestDatabase();
    db =
      dialect === "sqlite"
        ? new Kysely<Database>({ dialect: new SqliteDialect({ database: new SQLite(sqlitePath(database.url)) }) })
        : new Kysely<Database>({
            dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url }) }),
          });
    await migrateTo("026_card_payments");
    await seedCatalog({ db, dialect } as Tx, CATALOG_BEFORE_043);
    await db
      .insertInto("merchants")
      .values({
        id: "m1",
        email: "rails@example.com",
        merchant_name: null,
        director_name: null,
        website: null,
        logo: null,
        whitelabeling: 0,
        status: "active",
        fee_percent: "1",
        fees_paid_by: "merchant",
        callback_secret: "sealed",
        callback_secret_previous: null,
        callback_secret_rotated_at: null,
        created_at: T0,
        updated_at: T0,
      })
      .execute();
    await insertPayout("queued-1", "queued", null);
    await insertPayout("queued-2", "queued", null);
    await insertPayout("sent-sandbox", "sent", "sandbox");
    await insertPayout("sent-chain", "sent", "chain");
    await insertPayout("sending-operator", "sending", "operator");
    await insertPayout("sent-card-fallback", "sent", "sandbox_card+operator");
    await insertPayout("completed", "completed", "sandbox");
    await migrateTo(null);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const railOf = async (key: string) => (await findPayout({ db, dialect }, key))?.rail;

  it("gives each payout in flight the rail of the processor that carries it, and leaves queued ones to the worker", async () => {
    expect(await railOf("sent-sandbox")).toBe("sandbox");
    expect(await railOf("sent-chain")).toBe("evm");
    expect(await railOf("sending-operator")).toBe("operator");
    // The card processor passed payouts other than card refunds to the operator's.
    expect(await railOf("sent-card-fallback")).toBe("operator");
    expect(await railOf("queued-1")).toBeNull();
    expect(await railOf("completed")).toBeNull();
  });

  it("assigns queued payouts the rule's rail, after which only that rail's claim takes them", async () => {
    const tx: Tx = { db, dialect };
    const live = { mode: "live" as const, chainPayouts: false, cardRefunds: false };
    expect(await assignPayoutRails(tx, live, 1)).toBe(1);
    expect(await assignPayoutRails(tx, live, 10)).toBe(1);
    expect(await assignPayoutRails(tx, live, 10)).toBe(0);
    expect(await railOf("queued-1")).toBe("operator");
    const claim = (rail: "sandbox" | "operator") =>
      claimPayouts(tx, { now: LATER, leaseUntil: LATER, limit: 10, processor: rail, rail });
    expect(await claim("sandbox")).toEqual([]);
    expect((await claim("operator")).map((p) => p.requestKey).sort()).toEqual(["queued-1", "queued-2"]);
  });
});

describe("the rail chosen at acceptance", () => {
  it("is recorded on the payout, and a payout accepted without one gets it from the worker before its claim", async () => {
    const server = await startTestServer();
    try {
      const m = await fundedMerchant(server, "100");
      const first = await withdraw(server, m, { amount: "10" });
      expect(await findPayout(server.ctx.store, first.requestId.toLowerCase())).toMatchObject({
        state: "queued",
        rail: "sandbox",
      });
      // As a process of the version before rails would have accepted it.
      const second = await withdraw(server, m, { amount: "10" });
      const key = second.requestId.toLowerCase();
      await server.ctx.store.transaction((tx) =>
        tx.db.updateTable("payouts").set({ rail: null }).where("request_id", "=", key).execute(),
      );
      await payoutWorker(server).runOnce();
      expect(await findPayout(server.ctx.store, key)).toMatchObject({ state: "sent", rail: "sandbox" });
    } finally {
      await server.close();
    }
  });
});
