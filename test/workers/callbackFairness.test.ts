// Callbacks cannot be starved or poisoned: fair turns between merchants, and requests that cannot be built recorded as attempts.
import { afterEach, describe, expect, it } from "vitest";
import { CALLBACK_DEFAULTS, startCallbackWorker } from "../../src/workers/callbacks.ts";
import {
  attemptRows,
  changeStatus,
  eventRow,
  hold,
  insertInvoice,
  type Receiver,
  settleAllPending,
  startReceiver,
  waitFor,
} from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { call, createMerchant, expectProblem } from "../support/server.ts";

const server = useTestServer();
afterEach(async () => {
  await settleAllPending(server);
});

describe("fairness between merchants", () => {
  it("delivers another merchant's callback at once while one merchant's 64 events hang on 16 ports", async () => {
    const dead = hold();
    // Endpoints that never answer, each on its own port: a per-destination cap alone would let them fill every slot.
    const ports: Receiver[] = await Promise.all(Array.from({ length: 16 }, () => startReceiver(dead.responder)));
    const healthy = await startReceiver();
    const worker = startCallbackWorker(server.ctx, server.app.log, { autoStart: false, timeoutMs: 5000 });
    const noisy = (await createMerchant(server)).id;
    const quiet = (await createMerchant(server)).id;
    try {
      for (let i = 0; i < 64; i++) {
        const port = ports[i % ports.length]!;
        await changeStatus(server, await insertInvoice(server, noisy, port.url), "completed");
      }
      // The quiet merchant's event is the newest of all 65: oldest-first alone would serve it last.
      const quietEvent = (await changeStatus(server, await insertInvoice(server, quiet, healthy.url), "completed"))
        .event;

      const running = worker.runOnce();
      await waitFor(async () => (await eventRow(server, quietEvent.id)).status === "delivered");
      const hanging = () => ports.reduce((n, r) => n + r.open(), 0);
      await waitFor(() => hanging() > 0);
      // One merchant never holds more than its share of this process's slots.
      expect(hanging()).toBeLessThanOrEqual(CALLBACK_DEFAULTS.maxPerMerchant);
      expect(healthy.received).toHaveLength(1);
      dead.release();
      await running;
      expect(Math.max(...ports.map((r) => r.maxOpen()))).toBeLessThanOrEqual(CALLBACK_DEFAULTS.maxPerDestination);
    } finally {
      dead.release();
      await worker.stop();
      await Promise.all([...ports, healthy].map((r) => r.close()));
    }
  });

  it("serves each merchant's oldest due event before any merchant's next one", async () => {
    const dead = hold();
    const slow = await startReceiver(dead.responder);
    const other = await startReceiver(dead.responder);
    const healthy = await startReceiver();
    // Two slots in all: the busy merchant takes both first.
    const worker = startCallbackWorker(server.ctx, server.app.log, {
      autoStart: false,
      timeoutMs: 5000,
      maxInFlight: 2,
    });
    const busy = (await createMerchant(server)).id;
    const idle = (await createMerchant(server)).id;
    try {
      for (let i = 0; i < 6; i++) {
        await changeStatus(server, await insertInvoice(server, busy, i % 2 === 0 ? slow.url : other.url), "completed");
      }
      const first = worker.runOnce();
      await waitFor(() => slow.open() + other.open() === 2);
      const idleEvent = (await changeStatus(server, await insertInvoice(server, idle, healthy.url), "completed")).event;
      dead.release();
      await first;
      // Both slots are free: the idle merchant's first event ranks with the busy merchant's next, though it is the newest.
      const second = worker.runOnce();
      await waitFor(async () => (await eventRow(server, idleEvent.id)).status === "delivered");
      await second;
      const order = await server.ctx.store.db
        .selectFrom("callback_attempts as a")
        .innerJoin("callback_events as e", "e.id", "a.event_id")
        .select(["e.merchant_id", "a.started_at"])
        .where("e.merchant_id", "in", [busy, idle])
        .orderBy("a.started_at")
        .execute();
      // After the busy merchant's first two, the idle merchant's event was among the next claimed.
      expect(order.slice(2, 4).map((r) => r.merchant_id)).toContain(idle);
    } finally {
      dead.release();
      await worker.stop();
      await Promise.all([slow, other, healthy].map((r) => r.close()));
    }
  });
});

describe("callbacks that cannot be built", () => {
  it("refuses a callback URL whose credentials do not decode, at creation", async () => {
    const created = await call(server.baseUrl, "POST", "/public/v1/invoices/create", {
      headers: { "x-api-key": server.demo.apiKey },
      body: { currency: "USDT", amount: 10, callbackUrl: "http://%C3@127.0.0.1:9/cb" },
    });
    expectProblem(created, 400, "callback_url_invalid");
  });

  it("records an event stored with such a URL as a failed attempt, and the invoice's next event goes out", async () => {
    const healthy = await startReceiver();
    const merchantId = (await createMerchant(server)).id;
    try {
      // As an older release stored it: the URL passed its check then.
      const invoice = await insertInvoice(server, merchantId, "http://%C3@127.0.0.1:9/cb");
      const poisoned = await changeStatus(server, invoice, "processing");
      await server.ctx.store.transaction((tx) =>
        tx.db.updateTable("invoices").set({ callback_url: healthy.url }).where("id", "=", invoice.id).execute(),
      );
      const next = await changeStatus(server, { ...poisoned.invoice, callback_url: healthy.url }, "completed");
      await server.workers.loops.callbacks!.runOnce();
      const row = await eventRow(server, poisoned.event.id);
      expect(row.status).toBe("failed");
      const attempts = await attemptRows(server, poisoned.event.id);
      expect(attempts).toHaveLength(1);
      expect(attempts[0]!.error).toContain("percent-encoding");
      await server.workers.loops.callbacks!.runOnce();
      expect((await eventRow(server, next.event.id)).status).toBe("delivered");
      expect(healthy.received).toHaveLength(1);
    } finally {
      await healthy.close();
    }
  });

  it("records a secret that cannot be opened as a failed attempt on the normal schedule", async () => {
    const healthy = await startReceiver();
    const merchantId = (await createMerchant(server)).id;
    try {
      const { event } = await changeStatus(server, await insertInvoice(server, merchantId, healthy.url), "completed");
      // A sealed secret that no longer opens (damaged at rest, or sealed under another key).
      await server.ctx.store.transaction((tx) =>
        tx.db
          .updateTable("merchants")
          .set({ callback_secret: "v1.AAAA.AAAA.AAAA" })
          .where("id", "=", merchantId)
          .execute(),
      );
      const before = Date.now();
      await server.workers.loops.callbacks!.runOnce();
      const row = await eventRow(server, event.id);
      expect(row.status).toBe("pending");
      expect(Number(row.attempt_count)).toBe(1);
      expect(Number(row.schedule_position)).toBe(1);
      expect(row.lease_until).toBeNull();
      expect(Date.parse(row.next_attempt_at!)).toBeGreaterThan(before);
      const attempts = await attemptRows(server, event.id);
      expect(attempts).toHaveLength(1);
      expect(attempts[0]!.error).toMatch(/could not be made/);
      expect(healthy.received).toHaveLength(0);
    } finally {
      await healthy.close();
    }
  });
});
