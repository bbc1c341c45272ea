// Callback delivery (product §11) against a real local receiver: signatures, retries, ordering, crashes, leases, concurrency, safety.
import { readFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CALLBACK_INVOICE_FIELDS } from "../../src/domain/callbackEvent.ts";
import {
  CALLBACK_MAX_ATTEMPTS,
  CALLBACK_RETRY_DELAYS_MS,
  CALLBACK_RETRY_JITTER,
} from "../../src/domain/callbackSchedule.ts";
import { claimDueCallbacks } from "../../src/store/callbacks.ts";
import { recordInvoiceEvent } from "../../src/store/events.ts";
import { nowIso } from "../../src/store/store.ts";
import { startCallbackWorker } from "../../src/workers/callbacks.ts";
import {
  answer,
  attemptRows,
  changeStatus,
  eventRow,
  hold,
  insertInvoice,
  makeDue,
  type Receiver,
  settleAllPending,
  startReceiver,
  waitFor,
} from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import {
  admin,
  createMerchant,
  createTestDatabase,
  freePort,
  startTestServer,
  storeKind,
  type TestServer,
} from "../support/server.ts";

let merchantId: string;
let secret: string;
let receiver: Receiver;

const server = useTestServer();
beforeAll(async () => {
  merchantId = (await createMerchant(server)).id;
  secret = (await admin(server, "GET", `/merchants/${merchantId}/callback-secret`)).body.callbackSecret;
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});
afterEach(async () => {
  receiver.received.length = 0;
  await settleAllPending(server);
});

const runOnce = (s: TestServer = server) => s.workers.loops.callbacks!.runOnce();

function webhookHeaders(headers: Record<string, unknown>): Record<string, string> {
  return {
    "webhook-id": String(headers["webhook-id"]),
    "webhook-timestamp": String(headers["webhook-timestamp"]),
    "webhook-signature": String(headers["webhook-signature"]),
  };
}

describe("delivery", () => {
  it("POSTs the event body signed the Standard Webhooks way and records the attempt", async () => {
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const { invoice: changed, event } = await changeStatus(server, invoice, "processing");
    const before = Math.floor(Date.now() / 1000);
    expect(await runOnce()).toBe(1);
    expect(receiver.received).toHaveLength(1);
    const got = receiver.received[0]!;
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/callbacks");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["webhook-id"]).toBe(event.id);
    const timestamp = Number(got.headers["webhook-timestamp"]);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(got.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);

    const verified = new Webhook(secret).verify(got.body, webhookHeaders(got.headers)) as Record<string, any>;
    expect(Object.keys(verified)).toEqual(["type", "id", "created_at", "data"]);
    expect(verified.type).toBe("invoice.processing");
    expect(verified.id).toBe(event.id);
    expect(verified.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Object.keys(verified.data)).toEqual(["invoice"]);
    expect(Object.keys(verified.data.invoice)).toEqual([...CALLBACK_INVOICE_FIELDS]);
    expect(verified.data.invoice).toEqual(changed);
    expect(got.body).toBe(event.body);

    const row = await eventRow(server, event.id);
    expect(row).toMatchObject({ status: "delivered", attempt_count: 1, next_attempt_at: null, lease_until: null });
    expect(row.delivered_at).not.toBeNull();
    const attempts = await attemptRows(server, event.id);
    expect(attempts).toHaveLength(1);
    // A loopback receiver's answer is never kept (product §18): its status is.
    expect(attempts[0]).toMatchObject({ number: 1, status_code: 200, error: null, response_body: null });
    expect(attempts[0]!.duration_ms).toBeGreaterThanOrEqual(0);
    expect(attempts[0]!.duration_ms).toBeLessThan(5000);
    expect(await runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(1);
  });

  it("writes no event for a status change whose transaction rolls back", async () => {
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    await expect(
      server.ctx.store.transaction(async (tx) => {
        const now = nowIso();
        await tx.db.updateTable("invoices").set({ status: "processing" }).where("id", "=", invoice.id).execute();
        await recordInvoiceEvent(tx, { ...invoice, status: "processing" }, now);
        throw new Error("the status change fails after recording its event");
      }),
    ).rejects.toThrow(/fails after recording/);
    const events = await server.ctx.store.db
      .selectFrom("callback_events")
      .select("id")
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(events).toEqual([]);
    const listed = await server.ctx.store.db
      .selectFrom("events")
      .select("id")
      .where("subject_id", "=", invoice.id)
      .execute();
    expect(listed).toEqual([]);
    expect(await runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(0);
  });

  it("retries a 500 after about 5 seconds with the same id and bytes, then records the success", async () => {
    receiver.respond(answer(500, "database is down"));
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const { event } = await changeStatus(server, invoice, "completed");
    const attemptedAt = Date.now();
    expect(await runOnce()).toBe(1);
    let row = await eventRow(server, event.id);
    expect(row.status).toBe("pending");
    expect(row.schedule_position).toBe(1);
    const wait = Date.parse(row.next_attempt_at!) - attemptedAt;
    expect(wait).toBeGreaterThanOrEqual(5000 * (1 - CALLBACK_RETRY_JITTER) - 50);
    expect(wait).toBeLessThanOrEqual(5000 * (1 + CALLBACK_RETRY_JITTER) + 1000);
    // Not due yet: nothing happens.
    expect(await runOnce()).toBe(0);

    await makeDue(server, event.id);
    expect(await runOnce()).toBe(1);
    row = await eventRow(server, event.id);
    expect(row).toMatchObject({ status: "delivered", attempt_count: 2, next_attempt_at: null });
    const [first, second] = receiver.received;
    expect(first!.body).toBe(second!.body);
    expect(first!.headers["webhook-id"]).toBe(event.id);
    expect(second!.headers["webhook-id"]).toBe(event.id);
    for (const got of receiver.received)
      expect(() => new Webhook(secret).verify(got.body, webhookHeaders(got.headers))).not.toThrow();
    const attempts = await attemptRows(server, event.id);
    expect(attempts.map((a) => [a.number, a.status_code, a.response_body])).toEqual([
      [1, 500, null],
      [2, 200, null],
    ]);
  });

  it("counts a timeout as a failed attempt, bounded by CALLBACK_TIMEOUT_MS", async () => {
    const slow = hold();
    const hanging = await startReceiver(slow.responder);
    const short = await startTestServer({ database: server.database, env: { CALLBACK_TIMEOUT_MS: "300" } });
    try {
      const invoice = await insertInvoice(server, merchantId, hanging.url);
      const { event } = await changeStatus(server, invoice, "processing");
      // Without the bound the attempt would wait forever (the receiver never answers): the test's own timeout, not a clock, catches that.
      expect(await runOnce(short)).toBe(1);
      expect(hanging.received).toHaveLength(1);
      const [attempt] = await attemptRows(server, event.id);
      expect(attempt).toMatchObject({ number: 1, status_code: null, response_body: null });
      expect(attempt!.error).toMatch(/timeout/);
      expect(attempt!.duration_ms).toBeGreaterThanOrEqual(290);
      expect(attempt!.duration_ms).toBeLessThan(3000);
      expect((await eventRow(server, event.id)).status).toBe("pending");
    } finally {
      slow.release();
      await short.close();
      await hanging.close();
    }
  });

  it("counts a refused connection as a failed attempt", async () => {
    const closedPort = await freePort();
    const invoice = await insertInvoice(server, merchantId, `http://127.0.0.1:${closedPort}/cb`);
    const { event } = await changeStatus(server, invoice, "processing");
    expect(await runOnce()).toBe(1);
    const [attempt] = await attemptRows(server, event.id);
    expect(attempt).toMatchObject({ status_code: null, error: "connection refused" });
    expect(await eventRow(server, event.id)).toMatchObject({ status: "pending", schedule_position: 1 });
  });

  it("does not follow a redirect and keeps at most 2 KiB of a public address's answer", async () => {
    const target = await startReceiver();
    // The receiver listens on loopback; this worker treats it as the public address it stands in for.
    const worker = startCallbackWorker(server.ctx, server.app.log, {
      autoStart: false,
      timeoutMs: 5000,
      answerKept: () => true,
    });
    try {
      receiver.respond(
        answer(302, "", { location: target.url }),
        answer(500, "x".repeat(10_000)),
        answer(200, `${"é".repeat(1023)}yz`),
      );
      const invoice = await insertInvoice(server, merchantId, receiver.url);
      const { event } = await changeStatus(server, invoice, "processing");
      expect(await worker.runOnce()).toBe(1);
      await makeDue(server, event.id);
      expect(await worker.runOnce()).toBe(1);
      await makeDue(server, event.id);
      expect(await worker.runOnce()).toBe(1);
      expect(target.received).toHaveLength(0);
      const [redirect, big, multibyte] = await attemptRows(server, event.id);
      expect(redirect).toMatchObject({ status_code: 302 });
      expect(redirect!.error).toBe(`redirect not followed (${target.url})`);
      expect(big!.status_code).toBe(500);
      expect(big!.response_body).toBe("x".repeat(2048));
      // 2 KiB are bytes: 1023 two-byte characters and one more byte.
      expect(Buffer.byteLength(multibyte!.response_body!, "utf8")).toBeLessThanOrEqual(2048 + 2);
      expect(multibyte!.response_body!.startsWith("é".repeat(1023))).toBe(true);
      expect((await eventRow(server, event.id)).status).toBe("delivered");
    } finally {
      await worker.stop();
      await target.close();
    }
  });

  it("never keeps the answer of a loopback receiver: no body, no redirect target, only its status", async () => {
    const target = await startReceiver();
    try {
      const secretAnswer = "internal service: admin password is hunter2";
      receiver.respond(
        answer(302, secretAnswer, { location: `${target.url}?internal=secret` }),
        answer(500, secretAnswer),
        answer(200, secretAnswer),
      );
      const invoice = await insertInvoice(server, merchantId, receiver.url);
      const { event } = await changeStatus(server, invoice, "processing");
      for (let i = 0; i < 3; i++) {
        if (i > 0) await makeDue(server, event.id);
        expect(await runOnce()).toBe(1);
      }
      const attempts = await attemptRows(server, event.id);
      expect(attempts.map((a) => [a.status_code, a.response_body, a.error])).toEqual([
        [302, null, "redirect not followed"],
        [500, null, null],
        [200, null, null],
      ]);
      const shown = await admin(server, "GET", `/invoices/${invoice.id}/callbacks`);
      expect(shown.status).toBe(200);
      expect(shown.text).not.toContain("hunter2");
      expect(shown.text).not.toContain("internal=secret");
    } finally {
      await target.close();
    }
  });

  it("follows the written schedule for about a day, then marks the event failed", async () => {
    receiver.respond(...Array.from({ length: CALLBACK_MAX_ATTEMPTS }, () => answer(503)));
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const { event } = await changeStatus(server, invoice, "expired");
    for (let attempt = 1; attempt <= CALLBACK_MAX_ATTEMPTS; attempt++) {
      const before = Date.now();
      expect(await runOnce()).toBe(1);
      const row = await eventRow(server, event.id);
      const base = CALLBACK_RETRY_DELAYS_MS[attempt - 1];
      if (base === undefined) {
        expect(row).toMatchObject({ status: "failed", next_attempt_at: null, attempt_count: CALLBACK_MAX_ATTEMPTS });
      } else {
        expect(row.status).toBe("pending");
        const wait = Date.parse(row.next_attempt_at!) - before;
        expect(wait).toBeGreaterThanOrEqual(base * (1 - CALLBACK_RETRY_JITTER) - 50);
        expect(wait).toBeLessThanOrEqual(base * (1 + CALLBACK_RETRY_JITTER) + 1000);
        await makeDue(server, event.id);
      }
    }
    expect(receiver.received).toHaveLength(CALLBACK_MAX_ATTEMPTS);
    expect((await attemptRows(server, event.id)).map((a) => a.status_code)).toEqual(
      Array(CALLBACK_MAX_ATTEMPTS).fill(503),
    );
    // A failed event is not attempted again by itself.
    await makeDue(server, event.id);
    expect(await runOnce()).toBe(0);
  });
});

describe("ordering", () => {
  it("delivers the events of one invoice in order, holding later ones while an earlier one is retried", async () => {
    receiver.respond(answer(500));
    const other = await startReceiver();
    try {
      const invoice = await insertInvoice(server, merchantId, receiver.url);
      const first = await changeStatus(server, invoice, "processing");
      const second = await changeStatus(server, first.invoice, "aml_check");
      const third = await changeStatus(server, second.invoice, "completed");
      const elsewhere = await changeStatus(server, await insertInvoice(server, merchantId, other.url), "completed");

      // The first event fails; the others of its invoice wait, another invoice's event does not.
      expect(await runOnce()).toBe(2);
      expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([first.event.id]);
      expect(other.received.map((r) => r.headers["webhook-id"])).toEqual([elsewhere.event.id]);
      await makeDue(server, second.event.id);
      expect(await runOnce()).toBe(0);

      await makeDue(server, first.event.id);
      expect(await runOnce()).toBe(1);
      expect(await runOnce()).toBe(1);
      expect(await runOnce()).toBe(1);
      expect(await runOnce()).toBe(0);
      const order = receiver.received.map((r) => JSON.parse(r.body) as { id: string; type: string });
      expect(order.map((e) => e.id)).toEqual([first.event.id, first.event.id, second.event.id, third.event.id]);
      expect(order.map((e) => e.type)).toEqual([
        "invoice.processing",
        "invoice.processing",
        "invoice.aml_check",
        "invoice.completed",
      ]);
    } finally {
      await other.close();
    }
  });

  it("goes on with the next event once an earlier one has failed for good", async () => {
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const first = await changeStatus(server, invoice, "processing");
    const second = await changeStatus(server, first.invoice, "failed");
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("callback_events")
        .set({ status: "failed", next_attempt_at: null })
        .where("id", "=", first.event.id)
        .execute(),
    );
    expect(await runOnce()).toBe(1);
    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([second.event.id]);
  });
});

describe("signing secrets", () => {
  it("signs with the new and the old secret for 24 hours after a rotation, then with the new one only", async () => {
    const m = await createMerchant(server);
    const old = (await admin(server, "GET", `/merchants/${m.id}/callback-secret`)).body.callbackSecret as string;
    const rotated = (await admin(server, "POST", `/merchants/${m.id}/callback-secret/rotate`)).body
      .callbackSecret as string;
    const invoice = await insertInvoice(server, m.id, receiver.url);
    const { event } = await changeStatus(server, invoice, "completed");
    expect(await runOnce()).toBe(1);
    const during = receiver.received[0]!;
    const signatures = String(during.headers["webhook-signature"]).split(" ");
    expect(signatures).toHaveLength(2);
    const headers = webhookHeaders(during.headers);
    expect(new Webhook(rotated).verify(during.body, headers)).toMatchObject({ id: event.id });
    expect(new Webhook(old).verify(during.body, headers)).toMatchObject({ id: event.id });
    // The new secret's signature comes first.
    expect(new Webhook(rotated).verify(during.body, { ...headers, "webhook-signature": signatures[0]! })).toBeTruthy();
    expect(() => new Webhook(old).verify(during.body, { ...headers, "webhook-signature": signatures[0]! })).toThrow();

    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("merchants")
        .set({ callback_secret_rotated_at: new Date(Date.now() - 24 * 3600_000 - 1000).toISOString() })
        .where("id", "=", m.id)
        .execute(),
    );
    expect((await admin(server, "POST", `/callbacks/${event.id}/redeliver`)).status).toBe(200);
    expect(await runOnce()).toBe(1);
    const after = receiver.received[1]!;
    expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(new Webhook(rotated).verify(after.body, webhookHeaders(after.headers))).toMatchObject({ id: event.id });
    expect(() => new Webhook(old).verify(after.body, webhookHeaders(after.headers))).toThrow(/No matching signature/);
  });
});

describe("durability", () => {
  it("delivers, exactly once, an event whose process stopped between commit and delivery", async () => {
    const database = await createTestDatabase();
    const first = await startTestServer({ database });
    try {
      const m = await createMerchant(first);
      const invoice = await insertInvoice(first, m.id, receiver.url);
      const { event } = await changeStatus(first, invoice, "completed");
      await first.close();
      expect(receiver.received).toHaveLength(0);

      const second = await startTestServer({ database });
      try {
        expect(await runOnce(second)).toBe(1);
        expect(await runOnce(second)).toBe(0);
        expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([event.id]);
        expect(await eventRow(second, event.id)).toMatchObject({ status: "delivered", attempt_count: 1 });
      } finally {
        await second.close();
      }
    } finally {
      await database.drop();
    }
  });

  it("attempts again, once its lease ends, an event whose claimer died during the attempt", async () => {
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const { event } = await changeStatus(server, invoice, "completed");
    const now = new Date();
    // A worker claims the event and dies before attempting or recording anything.
    const claimed = await server.ctx.store.transaction((tx) =>
      claimDueCallbacks(tx, {
        now: now.toISOString(),
        leaseUntil: new Date(now.getTime() + 60_000).toISOString(),
        token: "dead-worker",
        limit: 10,
        excludeDestinations: [],
      }),
    );
    expect(claimed.map((e) => e.id)).toEqual([event.id]);
    expect(await runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(0);

    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("callback_events")
        .set({ lease_until: new Date(Date.now() - 1).toISOString() })
        .where("id", "=", event.id)
        .execute(),
    );
    expect(await runOnce()).toBe(1);
    expect(receiver.received).toHaveLength(1);
    expect(await eventRow(server, event.id)).toMatchObject({ status: "delivered", claim_token: null });
  });

  it("lets several workers deliver at once (separate processes on PostgreSQL), each event once", async () => {
    // SQLite serves one process per file, so there the second worker shares the store; PostgreSQL gets a second service.
    const other = storeKind() === "postgres" ? await startTestServer({ database: server.database }) : null;
    const second =
      other?.workers.loops.callbacks ??
      startCallbackWorker(server.ctx, server.app.log, { autoStart: false, timeoutMs: 5000 });
    try {
      const events: string[] = [];
      for (let i = 0; i < 12; i++) {
        const invoice = await insertInvoice(server, merchantId, `${receiver.url}?n=${i}`);
        events.push((await changeStatus(server, invoice, "completed")).event.id);
      }
      // Each round claims concurrently from both workers; the receiver would see any event twice.
      for (let round = 0; round < 12; round++) {
        const [a, b] = await Promise.all([runOnce(server), second!.runOnce()]);
        if (a + b === 0) break;
      }
      const ids = receiver.received.map((r) => String(r.headers["webhook-id"]));
      expect(ids.sort()).toEqual([...events].sort());
      const attempts = await server.ctx.store.db
        .selectFrom("callback_attempts")
        .select("event_id")
        .where("event_id", "in", events)
        .execute();
      expect(attempts).toHaveLength(events.length);
    } finally {
      await (other ? other.close() : second!.stop());
    }
  });
});

describe("concurrency bounds", () => {
  it("keeps at most 2 attempts in flight per destination, so a slow merchant does not hold up others", async () => {
    const slow = hold();
    const slowReceiver = await startReceiver(slow.responder);
    const fast = await startReceiver();
    try {
      const slowEvents: string[] = [];
      for (let i = 0; i < 5; i++) {
        const invoice = await insertInvoice(server, merchantId, slowReceiver.url);
        slowEvents.push((await changeStatus(server, invoice, "completed")).event.id);
      }
      const fastEvent = (await changeStatus(server, await insertInvoice(server, merchantId, fast.url), "completed"))
        .event.id;

      const running = runOnce();
      // The fast merchant's event is delivered while the slow one's first two attempts hang.
      await waitFor(async () => (await eventRow(server, fastEvent)).status === "delivered");
      await waitFor(() => slowReceiver.open() === 2);
      // The three events the slow destination had no room for are given back, unleased.
      const unleased = async () =>
        (
          await server.ctx.store.db
            .selectFrom("callback_events")
            .select("id")
            .where("id", "in", slowEvents)
            .where("lease_until", "is", null)
            .execute()
        ).length;
      await waitFor(async () => (await unleased()) === 3);
      expect(slowReceiver.received).toHaveLength(2);
      // While the slow destination is full, a new event for another destination still goes out at once.
      const later = await changeStatus(server, await insertInvoice(server, merchantId, fast.url), "completed");
      expect(await runOnce()).toBe(1);
      expect(fast.received.map((r) => r.headers["webhook-id"])).toEqual([fastEvent, later.event.id]);
      expect(slowReceiver.received).toHaveLength(2);
      slow.release();
      expect(await running).toBe(3);
      expect(slowReceiver.maxOpen()).toBe(2);

      for (let round = 0; round < 5; round++) if ((await runOnce()) === 0) break;
      expect(slowReceiver.received).toHaveLength(5);
      expect(slowReceiver.maxOpen()).toBe(2);
    } finally {
      slow.release();
      await slowReceiver.close();
      await fast.close();
    }
  });

  it("keeps at most the configured number of attempts in flight overall", async () => {
    const slow = hold();
    const receivers = await Promise.all(Array.from({ length: 4 }, () => startReceiver(slow.responder)));
    const worker = startCallbackWorker(server.ctx, server.app.log, {
      autoStart: false,
      timeoutMs: 5000,
      maxInFlight: 3,
    });
    try {
      for (const r of receivers)
        await changeStatus(server, await insertInvoice(server, merchantId, r.url), "completed");
      const running = worker.runOnce();
      await waitFor(() => receivers.reduce((n, r) => n + r.open(), 0) === 3);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(receivers.reduce((n, r) => n + r.received.length, 0)).toBe(3);
      slow.release();
      expect(await running).toBe(3);
      expect(await worker.runOnce()).toBe(1);
    } finally {
      slow.release();
      await worker.stop();
      await Promise.all(receivers.map((r) => r.close()));
    }
  });

  it("delivers by itself when the loop runs, and stops cleanly", async () => {
    const worker = startCallbackWorker(server.ctx, server.app.log, { autoStart: true, timeoutMs: 5000, pollMs: 20 });
    try {
      const invoice = await insertInvoice(server, merchantId, receiver.url);
      const first = await changeStatus(server, invoice, "processing");
      const second = await changeStatus(server, first.invoice, "completed");
      await waitFor(() => receiver.received.length === 2);
      expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual([first.event.id, second.event.id]);
    } finally {
      await worker.stop();
    }
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    await changeStatus(server, invoice, "processing");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.received).toHaveLength(2);
  });
});

describe("destination safety at delivery", () => {
  it("connects to the address it checked, resolved through the injected resolver", async () => {
    const names: string[] = [];
    const worker = startCallbackWorker(server.ctx, server.app.log, {
      autoStart: false,
      timeoutMs: 5000,
      lookup: async (hostname) => {
        names.push(hostname);
        return [{ address: "127.0.0.1", family: 4 }];
      },
    });
    try {
      const url = `http://merchant.invalid:${receiver.port}/hook`;
      const { event } = await changeStatus(server, await insertInvoice(server, merchantId, url), "completed");
      expect(await worker.runOnce()).toBe(1);
      expect(names).toEqual(["merchant.invalid"]);
      expect(receiver.received[0]!.headers.host).toBe(`merchant.invalid:${receiver.port}`);
      expect(receiver.received[0]!.url).toBe("/hook");
      expect((await eventRow(server, event.id)).status).toBe("delivered");
    } finally {
      await worker.stop();
    }
  });

  it("refuses, and retries later, a host that resolves to a private or metadata address", async () => {
    const answers = [
      [{ address: "10.1.2.3", family: 4 as const }],
      [
        { address: "93.184.215.14", family: 4 as const },
        { address: "fd00:ec2::254", family: 6 as const },
      ],
    ];
    const worker = startCallbackWorker(server.ctx, server.app.log, {
      autoStart: false,
      timeoutMs: 5000,
      lookup: async () => answers.shift() ?? [],
    });
    try {
      const url = `http://rebinding.invalid:${receiver.port}/hook`;
      const { event } = await changeStatus(server, await insertInvoice(server, merchantId, url), "completed");
      expect(await worker.runOnce()).toBe(1);
      await makeDue(server, event.id);
      expect(await worker.runOnce()).toBe(1);
      expect(receiver.received).toHaveLength(0);
      const attempts = await attemptRows(server, event.id);
      expect(attempts.map((a) => a.status_code)).toEqual([null, null]);
      expect(attempts[0]!.error).toMatch(/10\.1\.2\.3, a private address/);
      expect(attempts[1]!.error).toMatch(/fd00:ec2::254, a cloud metadata address/);
      expect((await eventRow(server, event.id)).status).toBe("pending");
    } finally {
      await worker.stop();
    }
  });

  it("in live mode refuses loopback at delivery time too", async () => {
    const live = await startTestServer({ database: server.database, env: { SERVICE_MODE: "live" } });
    try {
      const { event } = await changeStatus(server, await insertInvoice(server, merchantId, receiver.url), "completed");
      expect(await runOnce(live)).toBe(1);
      expect(receiver.received).toHaveLength(0);
      const [attempt] = await attemptRows(server, event.id);
      expect(attempt!.error).toMatch(/127\.0\.0\.1, a loopback address/);
      // The same event goes out from a sandbox process, where merchants test against localhost.
      await makeDue(server, event.id);
      expect(await runOnce()).toBe(1);
      expect(receiver.received).toHaveLength(1);
    } finally {
      await live.close();
    }
  });

  it("speaks TLS to the pinned address with the URL's host name, and verifies the certificate", async () => {
    const fixtures = new URL("../support/fixtures/", import.meta.url);
    const names: string[] = [];
    let requests = 0;
    const tls = createHttpsServer(
      {
        key: readFileSync(new URL("selfsigned.key", fixtures)),
        cert: readFileSync(new URL("selfsigned.crt", fixtures)),
        SNICallback: (name, done) => {
          names.push(name);
          done(null);
        },
      },
      (_req, res) => {
        requests += 1;
        res.end("ok");
      },
    );
    await new Promise<void>((resolve) => tls.listen(0, "127.0.0.1", resolve));
    const port = (tls.address() as AddressInfo).port;
    const worker = startCallbackWorker(server.ctx, server.app.log, {
      autoStart: false,
      timeoutMs: 5000,
      lookup: async () => [{ address: "127.0.0.1", family: 4 }],
    });
    try {
      const url = `https://merchant.invalid:${port}/hook`;
      const { event } = await changeStatus(server, await insertInvoice(server, merchantId, url), "completed");
      expect(await worker.runOnce()).toBe(1);
      expect(names).toEqual(["merchant.invalid"]);
      // A self-signed certificate is not trusted: the attempt fails before any request is sent.
      expect(requests).toBe(0);
      const [attempt] = await attemptRows(server, event.id);
      expect(attempt!.status_code).toBeNull();
      expect(attempt!.error).toMatch(/self.signed|certificate/i);
      expect((await eventRow(server, event.id)).status).toBe("pending");
    } finally {
      await worker.stop();
      tls.closeAllConnections();
      await new Promise<void>((resolve) => tls.close(() => resolve()));
    }
  });

  it("marks an event with an unusable URL failed at once", async () => {
    const invoice = await insertInvoice(server, merchantId, "ftp://files.example/cb");
    const { event } = await changeStatus(server, invoice, "completed");
    expect(await runOnce()).toBe(1);
    expect(await eventRow(server, event.id)).toMatchObject({ status: "failed", attempt_count: 1 });
    const [attempt] = await attemptRows(server, event.id);
    expect(attempt!.error).toMatch(/http or https/);
  });
});
