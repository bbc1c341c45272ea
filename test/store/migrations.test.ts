// Upgrades of a store that already holds data: migration 006 on payouts in every state, on both stores.
import { type Kysely, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seedCatalog } from "../../src/store/currencies.ts";
import { duePayoutChecks, expireLeases } from "../../src/store/payouts.ts";
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

const migrateTo = (target: string | null) => bare.migrateTo(target);

/** The indexes of the tables migration 006 touches, by name, with their definitions. */
async function indexesOfSignedOperationTables(): Promise<Map<string, string>> {
  const tables = sql.join(["payouts", "signed_requests", "withdrawals", "refunds"].map((t) => sql.lit(t)));
  const { rows } = await (dialect === "sqlite"
    ? sql<{ name: string; definition: string | null }>`select name, sql as definition from sqlite_master
        where type = 'index' and tbl_name in (${tables})`
    : sql<{ name: string; definition: string | null }>`select indexname as name, indexdef as definition
        from pg_indexes where tablename in (${tables})`
  ).execute(db);
  return new Map(rows.map((r) => [r.name, r.definition ?? ""]));
}

const T0 = "2026-01-01T00:00:00.000Z";
const PAST = "2026-01-01T00:05:00.000Z";
const NOW = "2026-01-01T00:10:00.000Z";
const FUTURE = "2026-01-01T01:00:00.000Z";

beforeAll(async () => {
  bare = await openMigrationDatabase();
  db = bare.db;
  await migrateTo("005_refunds");
  const tx: Tx = { db, dialect };
  await seedCatalog(tx, CATALOG_BEFORE_043);
  await db
    .insertInto("merchants")
    .values(oldMerchantRow("m1", "upgrade@example.com", T0))
    .execute();
  // One payout in each state the worker distinguishes, with the times that make the open ones due.
  const payouts = [
    { key: "queued", state: "queued", lease: null, check: null },
    { key: "sending-expired", state: "sending", lease: PAST, check: null },
    { key: "sending-held", state: "sending", lease: FUTURE, check: null },
    { key: "sent-due", state: "sent", lease: null, check: PAST },
    { key: "sent-later", state: "sent", lease: null, check: FUTURE },
    { key: "completed", state: "completed", lease: null, check: null },
  ];
  for (const p of payouts) {
    await db
      .insertInto("signed_requests")
      .values({
        request_id: p.key,
        request_id_sent: p.key,
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
        request_id: p.key,
        operation: "withdrawal",
        merchant_id: "m1",
        currency: "USDT",
        amount: "100",
        destination: "0xabc",
        ledger_cause: "withdrawal",
        state: p.state,
        processor: p.state === "queued" ? null : "sandbox",
        processor_status: null,
        processor_tx_id: null,
        claim_token: p.state === "sending" ? "token" : null,
        lease_until: p.lease,
        attempts: p.state === "queued" ? 0 : 1,
        next_check_at: p.check,
        last_error: null,
        created_at: T0,
        updated_at: T0,
        state_changed_at: T0,
        settled_at: p.state === "completed" ? T0 : null,
      })
      .execute();
  }
  await migrateTo(null);
});

afterAll(async () => {
  await bare?.close();
});

describe("006_write_path_indexes on a store that holds payouts", () => {
  it("replaces the lease and check indexes by partial ones and drops the unread merchant indexes", async () => {
    const indexes = await indexesOfSignedOperationTables();
    for (const gone of [
      "payouts_state_lease",
      "payouts_state_check",
      "payouts_merchant",
      "signed_requests_merchant",
      "withdrawals_merchant",
      "refunds_merchant",
    ]) {
      expect(indexes.has(gone), gone).toBe(false);
    }
    expect(indexes.get("payouts_sending_lease")).toMatch(/state.*=.*'sending'/);
    expect(indexes.get("payouts_sent_check")).toMatch(/state.*=.*'sent'/);
    expect(indexes.has("payouts_state_created")).toBe(true);
  });

  it("still finds the expired claims and the due checks that existed before the upgrade", async () => {
    const tx: Tx = { db, dialect };
    expect((await duePayoutChecks(tx, NOW, 10)).map((p) => p.requestKey)).toEqual(["sent-due"]);
    expect(await expireLeases(tx, NOW, 10)).toEqual(["sending-expired"]);
    const states = await db.selectFrom("payouts").select(["request_id", "state"]).orderBy("request_id").execute();
    expect(Object.fromEntries(states.map((r) => [r.request_id, r.state]))).toEqual({
      completed: "completed",
      queued: "queued",
      "sending-expired": "needs_reconciliation",
      "sending-held": "sending",
      "sent-due": "sent",
      "sent-later": "sent",
    });
  });
});
