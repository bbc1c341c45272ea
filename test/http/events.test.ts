// Events (product §15): GET /public/v1/events, byte-identical to the callbacks sent, payout events to the default callback URL, completeness after an outage.
import type { ServerResponse } from "node:http";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startCallbackWorker } from "../../src/workers/callbacks.ts";
import { answer, type Received, type Receiver, settleAllPending, startReceiver } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { completedInvoice, payoutOutcome, refundCrypto } from "../support/refunds.ts";
import { admin, expectProblem, merchant } from "../support/server.ts";
import { type FundedMerchant, fundedMerchant, withdraw } from "../support/withdrawals.ts";

let receiver: Receiver;
/** Whether the receiver answers 200 (true) or 500. */
let receiverUp = true;

const server = useTestServer();
beforeAll(async () => {
  receiver = await startReceiver((request: Received, res: ServerResponse) =>
    answer(receiverUp ? 200 : 500, receiverUp ? "ok" : "down")(request, res),
  );
});
afterAll(async () => {
  await receiver.close();
});
afterEach(async () => {
  receiverUp = true;
  receiver.received.length = 0;
  await settleAllPending(server);
});

const runOnce = () => server.workers.loops.callbacks!.runOnce();

async function secretOf(m: { id: string }): Promise<string> {
  return (await admin(server, "GET", `/merchants/${m.id}/callback-secret`)).body.callbackSecret;
}

async function setDefaultUrl(m: { id: string }, url: string | null): Promise<void> {
  const set = await admin(server, "PUT", `/merchants/${m.id}/default-callback-url`, { callbackUrl: url });
  expect(set.status).toBe(200);
}

interface ListedEvent {
  type: string;
  id: string;
  created_at: string;
  data: Record<string, any>;
}

async function listEvents(m: FundedMerchant, query = "limit=100") {
  const answer = await merchant<{ data: ListedEvent[]; has_more: boolean }>(
    server,
    m.apiKey,
    "GET",
    `/public/v1/events?${query}`,
  );
  expect(answer.status, answer.text).toBe(200);
  return answer;
}

/** The list's text is exactly `{"data":[<event text>,…],"has_more":…}` with each event's text as its callback sent it. */
function expectListIsTheBodies(text: string, bodies: string[], hasMore: boolean): void {
  expect(text).toBe(`{"data":[${bodies.join(",")}],"has_more":${hasMore}}`);
}

describe("GET /public/v1/events", () => {
  it("lists every invoice status change, with or without a callback URL, byte for byte as the callbacks sent", async () => {
    const m = await fundedMerchant(server, "0");
    const withUrl = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 20, callbackUrl: receiver.url });
    const withoutUrl = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 30 });
    expect((await pay(server, m.apiKey, withUrl.id, { txId: "tx-with-url", confirmed: false })).status).toBe(200);
    expect((await pay(server, m.apiKey, withUrl.id, { txId: "tx-with-url" })).status).toBe(200);
    expect((await pay(server, m.apiKey, withoutUrl.id)).status).toBe(200);
    while ((await runOnce()) > 0);

    const list = await listEvents(m);
    const events = list.body.data;
    const forWithUrl = events.filter((e) => e.data.invoice.id === withUrl.id);
    const forWithoutUrl = events.filter((e) => e.data.invoice.id === withoutUrl.id);
    expect(forWithUrl.map((e) => e.type).reverse()).toEqual(["invoice.processing", "invoice.completed"]);
    expect(forWithoutUrl.map((e) => e.type)).toEqual(["invoice.completed"]);
    expect(events).toHaveLength(3);
    // Newest first.
    const times = events.map((e) => e.created_at);
    expect([...times].sort().reverse()).toEqual(times);

    // The callbacks actually sent are the listed events of the invoice with a URL, same bytes and ids.
    const sent = receiver.received.map((r) => r.body);
    expect(sent).toHaveLength(2);
    expect(receiver.received.map((r) => r.headers["webhook-id"])).toEqual(forWithUrl.map((e) => e.id).reverse());
    const bodyOf = new Map(receiver.received.map((r) => [String(r.headers["webhook-id"]), r.body]));
    const withoutUrlText = JSON.stringify(forWithoutUrl[0]);
    expectListIsTheBodies(
      list.text,
      events.map((e) => bodyOf.get(e.id) ?? withoutUrlText),
      false,
    );
    // The event is the invoice as GetInvoice answers it.
    const current = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${withUrl.id}`);
    expect(forWithUrl[0]!.data.invoice).toEqual(current.body);
  });

  it("pages newest first, filters by type and time, and refuses what is not the merchant's", async () => {
    const m = await fundedMerchant(server, "0");
    const other = await fundedMerchant(server, "0");
    for (let i = 0; i < 5; i++) {
      const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 20 + i });
      expect((await pay(server, m.apiKey, invoice.id, { txId: `tx-${i}`, confirmed: false })).status).toBe(200);
      if (i % 2 === 0) expect((await pay(server, m.apiKey, invoice.id, { txId: `tx-${i}` })).status).toBe(200);
    }
    const foreign = await createInvoice(server, other.apiKey, { currency: "USDT", amount: 20 });
    expect((await pay(server, other.apiKey, foreign.id)).status).toBe(200);
    // Ties: two events of the same millisecond are ordered by id.
    const all = (await listEvents(m)).body.data;
    expect(all).toHaveLength(8);
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("events")
        .set({ created_at: "2026-06-01T00:00:00.000Z" })
        .where(
          "id",
          "in",
          all.slice(2, 5).map((e) => e.id),
        )
        .execute(),
    );
    const rows = await server.ctx.store.db
      .selectFrom("events")
      .select(["id", "created_at"])
      .where("merchant_id", "=", m.id)
      .execute();
    const expected = rows
      .sort((x, y) => (x.created_at === y.created_at ? (x.id < y.id ? 1 : -1) : x.created_at < y.created_at ? 1 : -1))
      .map((r) => r.id);
    for (const limit of [1, 3, 8]) {
      const ids: string[] = [];
      let after = "";
      for (let page = 0; page < 10; page++) {
        const answer = await listEvents(m, `limit=${limit}${after ? `&starting_after=${after}` : ""}`);
        ids.push(...answer.body.data.map((e) => e.id));
        if (!answer.body.has_more) break;
        after = answer.body.data.at(-1)!.id;
      }
      expect(ids, `limit ${limit}`).toEqual(expected);
    }
    const completed = await listEvents(m, "type=invoice.completed");
    expect(completed.body.data.map((e) => e.type)).toEqual([
      "invoice.completed",
      "invoice.completed",
      "invoice.completed",
    ]);
    const tied = await listEvents(m, "created_gte=2026-06-01T00:00:00Z&created_lt=2026-06-01T00:00:00.001Z");
    expect(tied.body.data.map((e) => e.id)).toEqual(expected.filter((id) => all.slice(2, 5).some((e) => e.id === id)));
    expect((await listEvents(other)).body.data.map((e) => e.data.invoice.id)).toEqual([foreign.id]);

    const foreignEvent = (await listEvents(other)).body.data[0]!.id;
    expectProblem(
      await merchant(server, m.apiKey, "GET", `/public/v1/events?starting_after=${foreignEvent}`),
      400,
      "starting_after_not_found",
    );
    for (const [query, pointer] of [
      ["type=invoice.done", "/type"],
      ["status=completed", "/status"],
      ["limit=0", "/limit"],
      ["limit=x", "/limit"],
      ["created_gte=now", "/created_gte"],
    ]) {
      const refused = await merchant(server, m.apiKey, "GET", `/public/v1/events?${query}`);
      expectProblem(refused, 400, "validation_failed");
      expect(refused.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
    }
  });
});

describe("withdrawal and refund events", () => {
  it("are delivered to the default callback URL, signed, with the request as the reads answer it", async () => {
    const m = await fundedMerchant(server, "1000");
    await setDefaultUrl(m, receiver.url);
    const secret = await secretOf(m);
    const done = await withdraw(server, m, { amount: "10" });
    const lost = await withdraw(server, m, { amount: "11" });
    expect((await payoutOutcome(server, m, done.requestId, { status: "completed", txId: "0xok" })).status).toBe(200);
    expect((await payoutOutcome(server, m, lost.requestId, { status: "failed" })).status).toBe(200);
    const paid = await completedInvoice(server, m, { currency: "USDT", amount: 50 });
    const refund = await refundCrypto(server, m, { invoiceId: paid.id, address: "0xrefund" });
    expect(refund.answer.status).toBe(200);
    expect((await payoutOutcome(server, m, refund.requestId, { status: "completed" })).status).toBe(200);
    while ((await runOnce()) > 0);

    const byType = new Map(receiver.received.map((r) => [JSON.parse(r.body).type as string, r]));
    expect([...byType.keys()].sort()).toEqual(["refund.completed", "withdrawal.completed", "withdrawal.failed"]);
    const hook = new Webhook(secret);
    for (const [type, id] of [
      ["withdrawal.completed", done.requestId],
      ["withdrawal.failed", lost.requestId],
      ["refund.completed", refund.requestId],
    ] as const) {
      const received = byType.get(type)!;
      const event = hook.verify(received.body, received.headers as Record<string, string>) as {
        id: string;
        data: { request: unknown };
      };
      expect(received.headers["webhook-id"]).toBe(event.id);
      expect(Object.keys(event)).toEqual(["type", "id", "created_at", "data"]);
      const path = type.startsWith("refund") ? "refunds" : "withdrawals";
      const read = await merchant(server, m.apiKey, "GET", `/public/v1/${path}/${id}`);
      expect(event.data).toEqual(read.body);
    }
    const failed = JSON.parse(byType.get("withdrawal.failed")!.body);
    expect(failed.data.request.status).toBe("failed");

    // Listed too, byte for byte, with the invoice events (no callback URL on that invoice).
    const list = await listEvents(m);
    for (const r of receiver.received) expect(list.text).toContain(r.body);
    // Events of one change share its created_at (the refund's payout and its invoice): the id orders them.
    expect(list.body.data.map((e) => e.type).sort()).toEqual([
      "invoice.completed",
      "invoice.refund_processing",
      "invoice.refunded",
      "refund.completed",
      "withdrawal.completed",
      "withdrawal.failed",
    ]);
    // The operator sees the payout callbacks as callback events without an invoice.
    const redelivered = await admin(server, "POST", `/callbacks/${failed.id}/redeliver`);
    expect(redelivered.status).toBe(200);
    expect(redelivered.body).toMatchObject({ type: "withdrawal.failed", invoiceId: null, url: receiver.url });
  });

  it("are listed but sent nowhere while no default callback URL is set", async () => {
    const m = await fundedMerchant(server, "100");
    const made = await withdraw(server, m, { amount: "10" });
    expect((await payoutOutcome(server, m, made.requestId, { status: "completed" })).status).toBe(200);
    expect(await runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(0);
    const list = await listEvents(m, "type=withdrawal.completed");
    expect(list.body.data).toHaveLength(1);
    const read = await merchant(server, m.apiKey, "GET", `/public/v1/withdrawals/${made.requestId}`);
    expect(list.body.data[0]!.data).toEqual(read.body);
    const queued = await server.ctx.store.db
      .selectFrom("callback_events")
      .select("id")
      .where("merchant_id", "=", m.id)
      .execute();
    expect(queued).toEqual([]);
  });
});

describe("a receiver down for an hour", () => {
  it("leaves the event list complete, and every event is delivered once it is back", async () => {
    const m = await fundedMerchant(server, "1000");
    await setDefaultUrl(m, receiver.url);
    receiverUp = false;
    let offsetMs = 0;
    const worker = startCallbackWorker(server.ctx, server.app.log, {
      autoStart: false,
      timeoutMs: 5000,
      clock: () => new Date(Date.now() + offsetMs),
      random: () => 0.5,
    });
    try {
      let changes = 0;
      // An hour of worker time, a look every minute; changes keep happening meanwhile.
      for (let minute = 0; minute <= 60; minute++) {
        offsetMs = minute * 60_000;
        if (minute % 15 === 0) {
          const invoice = await createInvoice(server, m.apiKey, {
            currency: "USDT",
            amount: 20,
            callbackUrl: receiver.url,
          });
          expect((await pay(server, m.apiKey, invoice.id)).status).toBe(200);
          const made = await withdraw(server, m, { amount: "10" });
          expect((await payoutOutcome(server, m, made.requestId, { status: "completed" })).status).toBe(200);
          changes += 2;
        }
        await worker.runOnce();
      }
      expect(receiver.received.length).toBeGreaterThan(0);
      expect(receiver.received.every((r) => r.at > 0)).toBe(true);
      const listed = await listEvents(m);
      expect(listed.body.data).toHaveLength(changes);
      expect(listed.body.data.filter((e) => e.type === "withdrawal.completed")).toHaveLength(changes / 2);

      // Back up: the retries (at most 2 h apart by then) deliver everything.
      receiverUp = true;
      for (let hour = 1; hour <= 4; hour++) {
        offsetMs = 60 * 60_000 + hour * 2 * 60 * 60_000;
        while ((await worker.runOnce()) > 0);
      }
      const delivered = new Map<string, string>();
      const deliveries = await server.ctx.store.db
        .selectFrom("callback_events")
        .select(["id", "status", "body"])
        .where("merchant_id", "=", m.id)
        .execute();
      expect(deliveries.every((d) => d.status === "delivered")).toBe(true);
      for (const r of receiver.received) delivered.set(String(r.headers["webhook-id"]), r.body);
      expect(new Set(delivered.keys())).toEqual(new Set(listed.body.data.map((e) => e.id)));
      expectListIsTheBodies(
        listed.text,
        listed.body.data.map((e) => delivered.get(e.id)!),
        false,
      );
    } finally {
      await worker.stop();
    }
  });
});
