// Callbacks end to end: invoice status changes made through the API reach the merchant's callback_url, signed, in order.
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Receiver, startReceiver, waitFor } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { admin, createMerchant, expectProblem, merchant, startTestServer } from "../support/server.ts";

let receiver: Receiver;
const server = useTestServer();
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

async function deliverAll(): Promise<void> {
  // Each runOnce attempts the events that are due and in order; bounded so a bug cannot spin.
  for (let i = 0; i < 10; i++) {
    if ((await server.workers.loops.callbacks!.runOnce()) === 0) return;
  }
}

describe("invoice callbacks", () => {
  it("delivers processing then completed, signed with the merchant's secret, carrying the invoice as GetInvoice shows it", async () => {
    const m = await createMerchant(server);
    const secret = (await admin(server, "GET", `/merchants/${m.id}/callback-secret`)).body.callbackSecret as string;
    const created = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "50",
      callbackUrl: receiver.url,
      order_no: "cb-1",
    });
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    const pay = (body: unknown) => merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${id}/payments`, body);
    expect((await pay({ txId: "0xaaa", confirmed: false, fromAddress: "0xpayer" })).body.status).toBe("processing");
    expect((await pay({ txId: "0xaaa", confirmed: true })).body.status).toBe("completed");

    const before = receiver.received.length;
    await deliverAll();
    await waitFor(() => receiver.received.length >= before + 2);
    const mine = receiver.received.slice(before).map((r) => ({ r, body: JSON.parse(r.body) }));
    expect(mine.map((x) => x.body.type)).toEqual(["invoice.processing", "invoice.completed"]);
    const verifier = new Webhook(secret);
    for (const { r, body } of mine) {
      expect(() => verifier.verify(r.body, r.headers as Record<string, string>)).not.toThrow();
      expect(r.headers["webhook-id"]).toBe(body.id);
      expect(Object.keys(body).sort()).toEqual(["created_at", "data", "id", "type"]);
    }
    const final = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${id}`);
    const delivered = mine[1]?.body.data.invoice;
    expect(delivered).toEqual(final.body);
    expect(mine[0]?.body.data.invoice.paid_amount).toBe("50");
    expect(mine[0]?.body.data.invoice.status).toBe("processing");
  });

  it("records nothing for an invoice without a callback_url", async () => {
    const m = await createMerchant(server);
    const created = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: 5,
    });
    await merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${created.body.id}/payments`, {});
    const events = await server.ctx.store.db
      .selectFrom("callback_events")
      .select("id")
      .where("invoice_id", "=", created.body.id)
      .execute();
    expect(events).toEqual([]);
  });

  it("writes no event when the status change is refused", async () => {
    const m = await createMerchant(server);
    const created = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: 5,
      callbackUrl: receiver.url,
    });
    const id = created.body.id as string;
    await merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${id}/payments`, {});
    const count = async () =>
      (await server.ctx.store.db.selectFrom("callback_events").select("id").where("invoice_id", "=", id).execute())
        .length;
    const after = await count();
    // A completed invoice takes no new payment: the 409 changes nothing, and records no event.
    expectProblem(
      await merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${id}/payments`, { txId: "0xnew" }),
      409,
      "invoice_not_payable",
    );
    expect(await count()).toBe(after);
  });
});

describe("callback URL safety at invoice creation", () => {
  it("refuses private and loopback destinations in live mode, and non-http schemes everywhere", async () => {
    const live = await startTestServer({ env: { SERVICE_MODE: "live" } });
    try {
      const m = await createMerchant(live);
      for (const url of [
        "http://127.0.0.1:9/cb",
        "http://10.0.0.5/cb",
        "http://169.254.169.254/latest",
        "http://localhost/cb",
      ]) {
        const answer = await merchant(live, m.apiKey, "POST", "/public/v1/invoices/create", {
          currency: "USDT",
          amount: 5,
          callbackUrl: url,
        });
        expectProblem(answer, 400, "callback_url_not_allowed");
      }
      const invoices = await live.ctx.store.db.selectFrom("invoices").select("id").execute();
      expect(invoices).toEqual([]);
    } finally {
      await live.close();
    }
    const m = await createMerchant(server);
    const ftp = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: 5,
      callbackUrl: "ftp://example.com/cb",
    });
    expect(ftp.status).toBe(400);
  });
});
