// Operator API for callbacks: an invoice's events with their attempts, and redelivery (also of failed events).
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimDueCallbacks } from "../../src/store/callbacks.ts";
import { answer, changeStatus, insertInvoice, type Receiver, startReceiver } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { admin, call, createMerchant, expectProblem } from "../support/server.ts";

let merchantId: string;
let receiver: Receiver;

const server = useTestServer();
beforeAll(async () => {
  merchantId = (await createMerchant(server)).id;
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const runOnce = () => server.workers.loops.callbacks!.runOnce();

const EVENT_KEYS = [
  "attemptCount",
  "attempts",
  "body",
  "createdAt",
  "deliveredAt",
  "id",
  "invoiceId",
  "merchantId",
  "nextAttemptAt",
  "status",
  "type",
  "url",
];

describe("GET /admin/v1/invoices/{id}/callbacks", () => {
  it("lists an invoice's events oldest first, each with its attempts", async () => {
    receiver.respond(answer(500, "try later"));
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const first = await changeStatus(server, invoice, "processing");
    const second = await changeStatus(server, first.invoice, "completed");
    await runOnce();
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("callback_events")
        .set({ next_attempt_at: new Date(Date.now() - 1000).toISOString() })
        .where("id", "=", first.event.id)
        .execute(),
    );
    await runOnce();
    await runOnce();

    const listed = await admin(server, "GET", `/invoices/${invoice.id}/callbacks`);
    expect(listed.status).toBe(200);
    expect(listed.body.map((e: { id: string }) => e.id)).toEqual([first.event.id, second.event.id]);
    const [a, b] = listed.body;
    expect(Object.keys(a).sort()).toEqual(EVENT_KEYS);
    expect(a).toMatchObject({
      type: "invoice.processing",
      invoiceId: invoice.id,
      merchantId,
      url: receiver.url,
      status: "delivered",
      nextAttemptAt: null,
      attemptCount: 2,
      body: first.event.body,
    });
    expect(a.deliveredAt).toMatch(/Z$/);
    expect(
      a.attempts.map((x: { number: number; statusCode: number; responseBody: string; error: null }) => [
        x.number,
        x.statusCode,
        x.responseBody,
        x.error,
      ]),
    ).toEqual([
      // The receiver is on loopback: its answers are never kept (product §18), its statuses are.
      [1, 500, null, null],
      [2, 200, null, null],
    ]);
    for (const attempt of a.attempts) {
      expect(Object.keys(attempt).sort()).toEqual([
        "durationMs",
        "error",
        "number",
        "responseBody",
        "startedAt",
        "statusCode",
      ]);
      expect(attempt.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(b).toMatchObject({ type: "invoice.completed", status: "delivered", attemptCount: 1 });
  });

  it("answers [] for an invoice without events, 404 for an unknown invoice, 401 without the token", async () => {
    const quiet = await insertInvoice(server, merchantId, null);
    expect((await admin(server, "GET", `/invoices/${quiet.id}/callbacks`)).body).toEqual([]);
    expectProblem(await admin(server, "GET", "/invoices/nope/callbacks"), 404, "invoice_not_found");
    expectProblem(
      await call(server.baseUrl, "GET", `/admin/v1/invoices/${quiet.id}/callbacks`),
      401,
      "invalid_admin_token",
    );
  });
});

describe("POST /admin/v1/callbacks/{eventId}/redeliver", () => {
  it("sends a failed event again, with the same id and bytes and a fresh schedule", async () => {
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const { event } = await changeStatus(server, invoice, "expired");
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("callback_events")
        .set({ status: "failed", next_attempt_at: null, schedule_position: 8, attempt_count: 8 })
        .where("id", "=", event.id)
        .execute(),
    );
    expect(await runOnce()).toBe(0);

    const before = Date.now();
    const redelivered = await admin(server, "POST", `/callbacks/${event.id}/redeliver`);
    expect(redelivered.status).toBe(200);
    expect(redelivered.body).toMatchObject({ id: event.id, status: "pending", attemptCount: 8 });
    expect(Date.parse(redelivered.body.nextAttemptAt)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(redelivered.body.nextAttemptAt)).toBeLessThanOrEqual(Date.now());

    const seen = receiver.received.length;
    expect(await runOnce()).toBe(1);
    const got = receiver.received[seen]!;
    expect(got.headers["webhook-id"]).toBe(event.id);
    expect(got.body).toBe(event.body);
    const secret = (await admin(server, "GET", `/merchants/${merchantId}/callback-secret`)).body.callbackSecret;
    expect(() =>
      new Webhook(secret).verify(got.body, {
        "webhook-id": String(got.headers["webhook-id"]),
        "webhook-timestamp": String(got.headers["webhook-timestamp"]),
        "webhook-signature": String(got.headers["webhook-signature"]),
      }),
    ).not.toThrow();
    const listed = await admin(server, "GET", `/invoices/${invoice.id}/callbacks`);
    expect(listed.body[0]).toMatchObject({ status: "delivered", attemptCount: 9 });
    expect(listed.body[0].attempts.map((x: { number: number }) => x.number)).toEqual([9]);
    const row = await server.ctx.store.db
      .selectFrom("callback_events")
      .select("schedule_position")
      .where("id", "=", event.id)
      .executeTakeFirstOrThrow();
    expect(row.schedule_position).toBe(0);
  });

  it("sends a delivered event again on request", async () => {
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const { event } = await changeStatus(server, invoice, "completed");
    expect(await runOnce()).toBe(1);
    expect((await admin(server, "POST", `/callbacks/${event.id}/redeliver`)).body.status).toBe("pending");
    expect(await runOnce()).toBe(1);
    const ids = receiver.received.map((r) => r.headers["webhook-id"]).filter((id) => id === event.id);
    expect(ids).toHaveLength(2);
  });

  it("answers 409 while an attempt is in flight, 404 for an unknown event", async () => {
    const invoice = await insertInvoice(server, merchantId, receiver.url);
    const { event } = await changeStatus(server, invoice, "completed");
    const now = new Date();
    await server.ctx.store.transaction((tx) =>
      claimDueCallbacks(tx, {
        now: now.toISOString(),
        leaseUntil: new Date(now.getTime() + 60_000).toISOString(),
        token: "busy",
        limit: 100,
        excludeDestinations: [],
      }),
    );
    expectProblem(
      await admin(server, "POST", `/callbacks/${event.id}/redeliver`),
      409,
      "callback_delivery_in_progress",
    );
    expectProblem(await admin(server, "POST", "/callbacks/evt_nope/redeliver"), 404, "callback_event_not_found");
  });
});
