// The expiry worker: expired or failed shortly after expires_at, bounded batches, no double processing, nothing lost on restart.
import { beforeAll, describe, expect, it } from "vitest";
import { startWorkers } from "../../src/workers/index.ts";
import { useTestServer } from "../support/fixture.ts";
import { aml, balances, createInvoice, invoiceMovements, pay } from "../support/invoices.ts";
import {
  createMerchant,
  createTestDatabase,
  expectProblem,
  merchant,
  startTestServer,
  storeKind,
  type TestServer,
} from "../support/server.ts";

let m: { id: string; apiKey: string };

const server = useTestServer();
beforeAll(async () => {
  m = await createMerchant(server);
});

/** Moves an invoice's expires_at into the past, as if its time had come. */
async function makeDue(target: TestServer, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const past = new Date(Date.now() - 1000).toISOString();
  await target.ctx.store.transaction((tx) =>
    tx.db.updateTable("invoices").set({ expires_at: past }).where("id", "in", ids).execute(),
  );
}

async function statusOf(target: TestServer, apiKey: string, id: string): Promise<string> {
  return (await merchant(target, apiKey, "GET", `/public/v1/invoices/${id}`)).body.status;
}

/** Runs a loop until a batch finds nothing; answers the total handled. */
async function drain(runOnce: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const handled = await runOnce();
    if (handled === 0) return total;
    total += handled;
  }
}

describe("expiry worker", () => {
  it("is registered as the loop named expiry", () => {
    expect(Object.keys(server.workers.loops)).toContain("expiry");
  });

  it("expires unpaid invoices and fails partly paid ones; leaves the others", async () => {
    const unpaid = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const partly = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, partly.id, { amount: 4 });
    const partlyUnconfirmed = await createInvoice(server, m.apiKey, { currency: "EUR", amount: 10 });
    await pay(server, m.apiKey, partlyUnconfirmed.id, { amount: 4, confirmed: false });
    const notDue = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const paid = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, paid.id);
    await makeDue(server, [unpaid.id, partly.id, partlyUnconfirmed.id, paid.id]);

    expect(await drain(server.workers.loops.expiry!.runOnce)).toBe(3);
    expect(await statusOf(server, m.apiKey, unpaid.id)).toBe("expired");
    expect(await statusOf(server, m.apiKey, partly.id)).toBe("failed");
    expect(await statusOf(server, m.apiKey, partlyUnconfirmed.id)).toBe("failed");
    expect(await statusOf(server, m.apiKey, notDue.id)).toBe("pending");
    expect(await statusOf(server, m.apiKey, paid.id)).toBe("completed");
    const failed = (await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${partly.id}`)).body;
    expect(failed.paid_amount).toBe("4");
    expect(Date.parse(failed.updated_at)).toBeGreaterThan(Date.parse(failed.created_at));
    // Nothing is credited for an invoice that did not complete.
    expect(await invoiceMovements(server, partly.id)).toHaveLength(0);
    // A settled invoice takes no more payments.
    expectProblem(await pay(server, m.apiKey, unpaid.id), 409, "invoice_not_payable");
    expectProblem(await pay(server, m.apiKey, partly.id, { amount: 6 }), 409, "invoice_not_payable");
  });

  it("leaves an invoice in aml_check to screening, and expires it if cleared short of final_amount", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, invoice.id, { amount: 4, amlFlag: true });
    await makeDue(server, [invoice.id]);
    expect(await drain(server.workers.loops.expiry!.runOnce)).toBe(0);
    expect(await statusOf(server, m.apiKey, invoice.id)).toBe("aml_check");
    expect((await aml(server, m.apiKey, invoice.id, "clear")).body.status).toBe("processing");
    expect(await drain(server.workers.loops.expiry!.runOnce)).toBe(1);
    expect(await statusOf(server, m.apiKey, invoice.id)).toBe("failed");
  });

  it("waits for the confirmation of a payment that covers final_amount, without picking it again", async () => {
    const mm = await createMerchant(server);
    const invoice = await createInvoice(server, mm.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, mm.apiKey, invoice.id, { txId: "0xslow", confirmed: false });
    await makeDue(server, [invoice.id]);
    expect(await server.workers.loops.expiry!.runOnce()).toBe(1);
    expect(await statusOf(server, mm.apiKey, invoice.id)).toBe("processing");
    // Deferred: the next batches do not see it again.
    expect(await server.workers.loops.expiry!.runOnce()).toBe(0);
    const done = await pay(server, mm.apiKey, invoice.id, { txId: "0xslow" });
    expect(done.body.status).toBe("completed");
    expect((await balances(server, mm.id)).USDT).toBe("8.9");
  });

  it("works in bounded batches", async () => {
    const mm = await createMerchant(server);
    const ids: string[] = [];
    for (let i = 0; i < 130; i++) ids.push((await createInvoice(server, mm.apiKey, { currency: "EUR", amount: 5 })).id);
    await makeDue(server, ids);
    const loop = server.workers.loops.expiry!;
    expect(await loop.runOnce()).toBe(100);
    expect(await loop.runOnce()).toBe(30);
    expect(await loop.runOnce()).toBe(0);
    const statuses = await server.ctx.store.db.selectFrom("invoices").select("status").where("id", "in", ids).execute();
    expect(statuses.every((s) => s.status === "expired")).toBe(true);
  });

  it("never processes one invoice twice when several workers run at once", async () => {
    // PostgreSQL: a second service process on the same database. SQLite (one process by design): a second worker set.
    const second = storeKind() === "postgres" ? await startTestServer({ database: server.database }) : null;
    const otherWorkers = second?.workers ?? (await startWorkers(server.ctx, server.app.log, { autoStart: false }));
    try {
      const mm = await createMerchant(server);
      const ids: string[] = [];
      for (let i = 0; i < 90; i++) {
        ids.push((await createInvoice(server, mm.apiKey, { currency: "USDT", amount: 10 })).id);
      }
      await makeDue(server, ids);
      const loops = [
        server.workers.loops.expiry!,
        server.workers.loops.expiry!,
        otherWorkers.loops.expiry!,
        otherWorkers.loops.expiry!,
      ];
      // A worker that claimed an invoice another one already handled would fail its conditional update and throw.
      const handled = await Promise.all(loops.map((loop) => drain(loop.runOnce)));
      expect(handled.reduce((a, b) => a + b, 0)).toBe(90);
      const expired = await server.ctx.store.db
        .selectFrom("invoices")
        .select("id")
        .where("id", "in", ids)
        .where("status", "=", "expired")
        .execute();
      expect(expired).toHaveLength(90);
    } finally {
      if (second) await second.close();
      else await otherWorkers.stop();
    }
  });

  it("loses nothing across a restart: the state is in the database", async () => {
    const database = await createTestDatabase();
    try {
      const first = await startTestServer({ database });
      const mm = await createMerchant(first);
      const invoice = await createInvoice(first, mm.apiKey, { currency: "USDT", amount: 10 });
      await makeDue(first, [invoice.id]);
      await first.close();
      const restarted = await startTestServer({ database });
      try {
        expect(await restarted.workers.loops.expiry!.runOnce()).toBe(1);
        expect(await statusOf(restarted, mm.apiKey, invoice.id)).toBe("expired");
      } finally {
        await restarted.close();
      }
    } finally {
      await database.drop();
    }
  });

  it("runs by itself: an invoice expires shortly after its expires_at", async () => {
    const running = await startTestServer({ workers: true });
    try {
      const mm = await createMerchant(running);
      const expiresAt = new Date(Date.now() + 1200).toISOString();
      const invoice = await createInvoice(running, mm.apiKey, { currency: "USDT", amount: 10, expiresAt });
      expect(await statusOf(running, mm.apiKey, invoice.id)).toBe("pending");
      const deadline = Date.now() + 8000;
      let status = "pending";
      while (status === "pending" && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        status = await statusOf(running, mm.apiKey, invoice.id);
      }
      expect(status).toBe("expired");
      const updated = (await merchant(running, mm.apiKey, "GET", `/public/v1/invoices/${invoice.id}`)).body;
      expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(expiresAt));
      expect(Date.parse(updated.updated_at) - Date.parse(expiresAt)).toBeLessThan(5000);
    } finally {
      await running.close();
    }
  });
});
