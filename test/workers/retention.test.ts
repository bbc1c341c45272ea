// Retention: callback attempts and dashboard audit rows older than their retention are deleted, in bounded batches; newer ones stay.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { deleteExpiredRows } from "../../src/store/retention.ts";
import { runRetentionBatch } from "../../src/workers/retention.ts";
import { changeStatus, insertInvoice, type Receiver, startReceiver } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { createMerchant } from "../support/server.ts";

const DAY_MS = 86_400_000;
let receiver: Receiver;
const server = useTestServer({ env: { CALLBACK_ATTEMPT_RETENTION_DAYS: "30", AUDIT_RETENTION_DAYS: "400" } });
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const daysAgo = (days: number) => new Date(Date.now() - days * DAY_MS).toISOString();

/** `count` audit rows of a merchant created `days` ago; answers their ids. */
async function auditRows(merchantId: string, count: number, days: number): Promise<string[]> {
  const rows = Array.from({ length: count }, () => ({
    id: `aud_${randomUUID()}`,
    merchant_id: merchantId,
    user_id: null,
    user_email: "owner@shop.test",
    action: "api_key.create",
    target: null,
    address: "127.0.0.1",
    created_at: daysAgo(days),
  }));
  for (let i = 0; i < rows.length; i += 200) {
    await server.ctx.store.transaction((tx) =>
      tx.db
        .insertInto("dashboard_audit")
        .values(rows.slice(i, i + 200))
        .execute(),
    );
  }
  return rows.map((r) => r.id);
}

async function countWhere(
  table: "callback_attempts" | "dashboard_audit",
  column: "event_id" | "merchant_id",
  value: string,
) {
  const row = await server.ctx.store.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where(column, "=", value)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe("retention", () => {
  it("reads its settings, bounded: 1 to 3650 days, defaults 90 and 365", () => {
    const base = { DATABASE_URL: "sqlite:./data/x.db" };
    expect(loadConfig(base)).toMatchObject({ callbackAttemptRetentionDays: 90, auditRetentionDays: 365 });
    expect(server.config).toMatchObject({ callbackAttemptRetentionDays: 30, auditRetentionDays: 400 });
    for (const [name, value] of [
      ["CALLBACK_ATTEMPT_RETENTION_DAYS", "0"],
      ["CALLBACK_ATTEMPT_RETENTION_DAYS", "3651"],
      ["AUDIT_RETENTION_DAYS", "0"],
      ["AUDIT_RETENTION_DAYS", "forever"],
    ] as const) {
      expect(() => loadConfig({ ...base, [name]: value })).toThrow(name);
    }
  });

  it("deletes callback attempts and audit rows past their retention, newest kept, at most a batch per table at a time", async () => {
    const m = await createMerchant(server);
    const invoice = await insertInvoice(server, m.id, receiver.url);
    const { event } = await changeStatus(server, invoice, "processing");
    await server.workers.loops.callbacks!.runOnce();
    const { event: second } = await changeStatus(server, invoice, "completed");
    await server.workers.loops.callbacks!.runOnce();
    expect(await countWhere("callback_attempts", "event_id", event.id)).toBe(1);
    // The first attempt is 31 days old (past 30), the second 29 days (kept).
    await server.ctx.store.transaction(async (tx) => {
      await tx.db
        .updateTable("callback_attempts")
        .set({ started_at: daysAgo(31) })
        .where("event_id", "=", event.id)
        .execute();
      await tx.db
        .updateTable("callback_attempts")
        .set({ started_at: daysAgo(29) })
        .where("event_id", "=", second.id)
        .execute();
    });
    const old = await auditRows(m.id, 25, 401);
    const recent = await auditRows(m.id, 3, 399);

    // A small batch shows the bound: at most 10 rows of each table per transaction.
    const first = await server.ctx.store.transaction((tx) =>
      deleteExpiredRows(tx, { callbackAttemptsBefore: daysAgo(30), auditBefore: daysAgo(400) }, 10),
    );
    expect(first).toEqual({ callbackAttempts: 1, auditRows: 10 });

    // The worker's own batches until nothing is left (bounded: each deletes at least one row or ends).
    let deleted = 0;
    for (let i = 0; i < 100; i++) {
      const n = await runRetentionBatch(server.ctx);
      if (n === 0) break;
      deleted += n;
    }
    expect(deleted).toBe(old.length - 10);
    expect(await countWhere("callback_attempts", "event_id", event.id)).toBe(0);
    expect(await countWhere("callback_attempts", "event_id", second.id)).toBe(1);
    const left = await server.ctx.store.db
      .selectFrom("dashboard_audit")
      .select("id")
      .where("merchant_id", "=", m.id)
      .execute();
    expect(left.map((r) => r.id).sort()).toEqual([...recent].sort());
    // The event keeps its count: a later attempt is numbered after the deleted one.
    const kept = await server.ctx.store.db
      .selectFrom("callback_events")
      .select("attempt_count")
      .where("id", "=", event.id)
      .executeTakeFirstOrThrow();
    expect(Number(kept.attempt_count)).toBe(1);
  });

  it("runs as one of the service's workers", () => {
    expect(server.workers.loops.retention).toBeDefined();
  });
});
