// Dashboard invoices and callbacks (product §14) on both stores: detail, payment links, redelivery, callback secret; roles and other merchants.
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Receiver, startReceiver, waitFor } from "../support/callbacks.ts";
import { type DashboardClient, invitedUser, PASSWORD } from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, expectInvoiceShape, pay } from "../support/invoices.ts";
import { admin, createMerchant, expectProblem } from "../support/server.ts";

let shop: { id: string; apiKey: string };
let other: { id: string; apiKey: string };
let owner: DashboardClient;
let developer: DashboardClient;
let viewer: DashboardClient;
let stranger: DashboardClient;
let receiver: Receiver;

const server = useTestServer();
beforeAll(async () => {
  shop = await createMerchant(server);
  other = await createMerchant(server);
  owner = await invitedUser(server, shop.id, "owner");
  developer = await invitedUser(server, shop.id, "developer");
  viewer = await invitedUser(server, shop.id, "viewer");
  stranger = await invitedUser(server, other.id, "owner");
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const runCallbacks = () => server.workers.loops.callbacks!.runOnce();

async function auditActions(client: DashboardClient): Promise<string[]> {
  const log = await client.call("GET", "/audit?limit=100");
  expect(log.status).toBe(200);
  return log.body.items.map((i: { action: string }) => i.action);
}

describe("invoice detail", () => {
  it("answers the invoice with its payments and callback events; another merchant's is 404", async () => {
    const invoice = await createInvoice(server, shop.apiKey, {
      currency: "USDT",
      amount: "25",
      order_no: "A-1",
      callbackUrl: receiver.url,
    });
    expect((await pay(server, shop.apiKey, invoice.id, {})).status).toBe(200);
    await runCallbacks();
    for (const client of [owner, developer, viewer]) {
      const detail = await client.call("GET", `/invoices/${invoice.id}`);
      expect(detail.status).toBe(200);
      expectInvoiceShape(detail.body.invoice);
      expect(detail.body.invoice.status).toBe("completed");
      expect(detail.body.payments).toHaveLength(1);
      expect(detail.body.payments[0]).toMatchObject({
        amount: "25",
        confirmed: true,
        valueUsd: "25",
        liveRateUsd: "1",
        liveValueUsd: "25",
      });
      expect(detail.body.quote).toEqual({
        fixed: true,
        rates: [{ currency: "USDT", rate_usd: "1", source: "static", updated_at: null }],
      });
      expect(detail.body.callbacks.map((e: { type: string }) => e.type)).toContain("invoice.completed");
      expect(detail.body.history.map((h: { status: string }) => h.status)).toEqual(["pending", "completed"]);
      expect(detail.body.history[0].at).toBe(invoice.created_at);
      expect(detail.body.callbacks.every((e: { attempts: unknown[] }) => e.attempts.length >= 1)).toBe(true);
    }
    expectProblem(await stranger.call("GET", `/invoices/${invoice.id}`), 404, "invoice_not_found");
    expectProblem(await owner.call("GET", "/invoices/nope"), 404, "invoice_not_found");
  });
});

describe("redelivery", () => {
  it("owners and developers redeliver their events (audited); viewers cannot; another merchant's is 404", async () => {
    const invoice = await createInvoice(server, shop.apiKey, {
      currency: "USDT",
      amount: "5",
      callbackUrl: receiver.url,
    });
    expect((await pay(server, shop.apiKey, invoice.id, {})).status).toBe(200);
    await runCallbacks();
    const detail = await owner.call("GET", `/invoices/${invoice.id}`);
    const event = detail.body.callbacks.at(-1);
    expect(event.status).toBe("delivered");
    const before = receiver.received.length;

    expectProblem(await viewer.call("POST", `/callback-events/${event.id}/redeliver`), 403, "role_forbidden");
    expectProblem(
      await stranger.call("POST", `/callback-events/${event.id}/redeliver`),
      404,
      "callback_event_not_found",
    );
    expectProblem(await owner.call("POST", "/callback-events/evt_nope/redeliver"), 404, "callback_event_not_found");
    expectProblem(
      await owner.call("POST", `/callback-events/${event.id}/redeliver`, undefined, { csrf: null }),
      403,
      "csrf_failed",
    );

    const redelivered = await developer.call("POST", `/callback-events/${event.id}/redeliver`);
    expect(redelivered.status).toBe(200);
    expect(redelivered.body).toMatchObject({ id: event.id, status: "pending" });
    await runCallbacks();
    await waitFor(() => receiver.received.length > before);
    const again = await owner.call("GET", `/invoices/${invoice.id}`);
    const after = again.body.callbacks.find((e: { id: string }) => e.id === event.id);
    expect(after.status).toBe("delivered");
    expect(after.attempts.length).toBe(event.attempts.length + 1);
    expect(await auditActions(owner)).toContain("callback.redeliver");
  });
});

describe("payment links", () => {
  it("creates an invoice through CreateInvoice's rules, with its invoice_url (owners and developers, audited)", async () => {
    for (const client of [owner, developer]) {
      const made = await client.call("POST", "/payment-links", {
        currency: "USDT",
        amount: "12.5",
        order_no: "LINK-1",
      });
      expect(made.status).toBe(200);
      expectInvoiceShape(made.body);
      expect(made.body).toMatchObject({ merchant_id: shop.id, amount: "12.5", status: "pending", order_no: "LINK-1" });
      expect(made.body.invoice_url).toBe(`${server.config.publicBaseUrl}/pay/${made.body.id}`);
      expect((await client.call("GET", `/invoices/${made.body.id}`)).status).toBe(200);
    }
    expectProblem(
      await viewer.call("POST", "/payment-links", { currency: "USDT", amount: "1" }),
      403,
      "role_forbidden",
    );
    expectProblem(
      await owner.call("POST", "/payment-links", { currency: "NOPE", amount: "1" }),
      400,
      "unknown_currency",
    );
    expectProblem(
      await owner.call("POST", "/payment-links", { currency: "USDT", amount: "-1" }),
      400,
      "amount_negative",
    );
    expect(await auditActions(owner)).toContain("invoice.create_payment_link");
  });
});

describe("callback secret", () => {
  it("reveal and rotate need the role and a step-up, and are audited", async () => {
    expectProblem(await viewer.call("POST", "/callbacks/secret/reveal"), 403, "role_forbidden");
    expectProblem(await viewer.call("POST", "/callbacks/secret/rotate"), 403, "role_forbidden");
    // Accepting the invitation counted as a step-up; age it out.
    await server.ctx.store.transaction((tx) =>
      tx.db.updateTable("dashboard_sessions").set({ step_up_at: null }).execute(),
    );
    expectProblem(await developer.call("POST", "/callbacks/secret/reveal"), 403, "step_up_required");
    expectProblem(await owner.call("POST", "/callbacks/secret/rotate"), 403, "step_up_required");
    expect((await developer.call("POST", "/step-up", { password: PASSWORD })).status).toBe(200);
    expect((await owner.call("POST", "/step-up", { password: PASSWORD })).status).toBe(200);

    const revealed = await developer.call("POST", "/callbacks/secret/reveal");
    expect(revealed.status).toBe(200);
    expect(revealed.body.callbackSecret).toMatch(/^whsec_/);
    const rotated = await owner.call("POST", "/callbacks/secret/rotate");
    expect(rotated.status).toBe(200);
    expect(rotated.body.callbackSecret).not.toBe(revealed.body.callbackSecret);
    expect((await owner.call("POST", "/callbacks/secret/reveal")).body.callbackSecret).toBe(
      rotated.body.callbackSecret,
    );
    // Another merchant's secret is untouched and its own.
    const stranger_ = await stranger.call("POST", "/callbacks/secret/reveal");
    expect(stranger_.body.callbackSecret).not.toBe(rotated.body.callbackSecret);
    const actions = await auditActions(owner);
    expect(actions).toContain("callback_secret.reveal");
    expect(actions).toContain("callback_secret.rotate");
  });
});

describe("default callback URL", () => {
  it("everyone reads it; owners and developers set and clear it (checked, audited); viewers cannot", async () => {
    const initial = await viewer.call("GET", "/callbacks");
    expect(initial.status).toBe(200);
    expect(initial.body).toEqual({ defaultCallbackUrl: null, secretRotatedAt: expect.any(String) });
    expectProblem(await viewer.call("PUT", "/callbacks/url", { callbackUrl: receiver.url }), 403, "role_forbidden");
    expectProblem(
      await developer.call("PUT", "/callbacks/url", { callbackUrl: "ftp://x.example" }),
      400,
      "validation_failed",
    );
    const set = await developer.call("PUT", "/callbacks/url", { callbackUrl: receiver.url });
    expect(set.status).toBe(200);
    expect(set.body.defaultCallbackUrl).toBe(receiver.url);
    expect((await viewer.call("GET", "/callbacks")).body.defaultCallbackUrl).toBe(receiver.url);
    expect((await stranger.call("GET", "/callbacks")).body.defaultCallbackUrl).toBeNull();
    expect((await owner.call("PUT", "/callbacks/url", { callbackUrl: null })).body.defaultCallbackUrl).toBeNull();
    expect(await auditActions(owner)).toContain("callback_url.set");
  });
});

describe("invoice list, search and CSV export", () => {
  let listed: Record<string, any>[] = [];
  let lister: { id: string; apiKey: string };
  let reader: DashboardClient;

  beforeAll(async () => {
    lister = await createMerchant(server);
    reader = await invitedUser(server, lister.id, "viewer");
    const made = [];
    for (const [i, order] of ["=cmd|' /C calc'!A0", "plain, with comma", '+quote"d', "@sum", "-5", "x"].entries()) {
      made.push(
        await createInvoice(server, lister.apiKey, {
          currency: "USDT",
          amount: String(10 + i),
          order_no: order,
          ...(i === 0 ? { description: "two\nlines" } : {}),
        }),
      );
    }
    expect((await pay(server, lister.apiKey, made[1]!.id, {})).status).toBe(200);
    listed = made.reverse();
  });

  it("pages newest first with starting_after, filters by status and dates; another merchant's cursor is a 400", async () => {
    const first = await reader.call("GET", "/invoices?limit=4");
    expect(first.status).toBe(200);
    expect(first.body.has_more).toBe(true);
    expect(first.body.data.map((i: { id: string }) => i.id)).toEqual(listed.slice(0, 4).map((i) => i.id));
    expectInvoiceShape(first.body.data[0]);
    const second = await reader.call("GET", `/invoices?limit=4&starting_after=${first.body.data[3].id}`);
    expect(second.body.data.map((i: { id: string }) => i.id)).toEqual(listed.slice(4).map((i) => i.id));
    expect(second.body.has_more).toBe(false);

    const completed = await reader.call("GET", "/invoices?status=completed");
    expect(completed.body.data.map((i: { id: string }) => i.id)).toEqual([listed[4]!.id]);
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await reader.call("GET", `/invoices?created_gte=${future}`)).body.data).toEqual([]);
    expect((await reader.call("GET", `/invoices?created_lt=${future}&limit=100`)).body.data).toHaveLength(6);

    expectProblem(await reader.call("GET", `/invoices?starting_after=${shop.id}`), 400, "starting_after_not_found");
    expectProblem(await reader.call("GET", "/invoices?status=nope"), 400, "validation_failed");
    expectProblem(await reader.call("GET", "/invoices?limit=1000"), 400, "validation_failed");
    // Another merchant's invoices never appear.
    expect(
      (await owner.call("GET", "/invoices?limit=100")).body.data.some((i: { id: string }) => i.id === listed[0]!.id),
    ).toBe(false);
  });

  it("searches by invoice id and by order number, within the merchant", async () => {
    const byId = await reader.call("GET", `/invoices?q=${listed[2]!.id}`);
    expect(byId.body.data.map((i: { id: string }) => i.id)).toEqual([listed[2]!.id]);
    const byOrder = await reader.call("GET", `/invoices?q=${encodeURIComponent("plain, with comma")}`);
    expect(byOrder.body.data.map((i: { id: string }) => i.id)).toEqual([listed[4]!.id]);
    expect((await stranger.call("GET", `/invoices?q=${listed[2]!.id}`)).body.data).toEqual([]);
  });

  it("exports CSV with quoting and the formula guard, bounded, audited", async () => {
    const csv = await reader.call("GET", "/invoices/export.csv");
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csv.headers.get("content-disposition")).toMatch(/^attachment; filename="invoices-\d{4}-\d{2}-\d{2}\.csv"$/);
    const text = csv.text;
    const lines = text.split("\r\n");
    expect(lines[0]).toBe(
      "id,created_at,updated_at,status,type,currency,amount,final_amount,paid_amount,merchant_fee,network_and_other_fees,merchant_receive_amount,settlement_currency,convert_currency,order_no,description,expires_at,invoice_url,quote_rates_usd,paid_value_usd",
    );
    expect(text.endsWith("\r\n")).toBe(true);
    expect(text).toContain(`"'=cmd|' /C calc'!A0","two\nlines"`);
    expect(text).toContain(',"plain, with comma",');
    expect(text).toContain(`,"'+quote""d",`);
    expect(text).toContain(`,"'@sum",`);
    expect(text).toContain(`,"'-5",`);
    expect(text.indexOf(listed[0]!.id)).toBeLessThan(text.indexOf(listed[5]!.id));
    const filtered = await reader.call("GET", "/invoices/export.csv?status=completed");
    expect(filtered.text.trim().split("\r\n")).toHaveLength(2);
    // The quote and the confirmed payment's USD value close the row (11 USDT at the static 1).
    expect(filtered.text.trim().split("\r\n")[1]).toMatch(/,USDT=1,11$/);
    const after = await reader.call("GET", `/invoices/export.csv?starting_after=${listed[4]!.id}`);
    expect(after.text.trim().split("\r\n")).toHaveLength(2);
    expectProblem(
      await reader.call("GET", "/invoices/export.csv?starting_after=nope"),
      400,
      "starting_after_not_found",
    );
    const ownerOfLister = await invitedUser(server, lister.id, "owner");
    expect(await auditActions(ownerOfLister)).toContain("invoice.export");
  });
});

describe("test event", () => {
  it("sends a signed callback.test to the default URL, recorded with its attempts (owners and developers, audited)", async () => {
    expectProblem(await viewer.call("POST", "/callbacks/test"), 403, "role_forbidden");
    expect((await owner.call("PUT", "/callbacks/url", { callbackUrl: null })).status).toBe(200);
    expectProblem(await developer.call("POST", "/callbacks/test"), 409, "default_callback_url_missing");
    expect((await owner.call("PUT", "/callbacks/url", { callbackUrl: receiver.url })).status).toBe(200);
    const before = receiver.received.length;
    const sent = await developer.call("POST", "/callbacks/test");
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ type: "callback.test", status: "pending", url: receiver.url, invoiceId: null });
    await runCallbacks();
    await waitFor(() => receiver.received.length > before);
    const got = receiver.received.at(-1)!;
    expect(got.headers["webhook-id"]).toBe(sent.body.id);
    const secret = (await admin(server, "GET", `/merchants/${shop.id}/callback-secret`)).body.callbackSecret;
    const verified = new Webhook(secret).verify(got.body, {
      "webhook-id": String(got.headers["webhook-id"]),
      "webhook-timestamp": String(got.headers["webhook-timestamp"]),
      "webhook-signature": String(got.headers["webhook-signature"]),
    }) as Record<string, any>;
    expect(verified).toMatchObject({ type: "callback.test", id: sent.body.id, data: { merchant_id: shop.id } });
    const recorded = await viewer.call("GET", `/callback-events/${sent.body.id}`);
    expect(recorded.body.status).toBe("delivered");
    expect(recorded.body.attempts).toHaveLength(1);
    expect(recorded.body.attempts[0].statusCode).toBe(200);
    expectProblem(await stranger.call("GET", `/callback-events/${sent.body.id}`), 404, "callback_event_not_found");
    // Not a business event: the merchant's event list does not show it.
    const events = await server.ctx.store.db.selectFrom("events").select("id").where("id", "=", sent.body.id).execute();
    expect(events).toEqual([]);
    expect(await auditActions(owner)).toContain("callback.test");
  });
});

describe("overview", () => {
  it("shows the merchant's newest events as recent activity, at most 10, newest first, and none of another merchant's", async () => {
    const paid: string[] = [];
    for (let i = 0; i < 11; i++) {
      const invoice = await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "3" });
      expect((await pay(server, shop.apiKey, invoice.id, {})).status).toBe(200);
      paid.push(invoice.id);
    }
    const overview = await viewer.call("GET", "/overview");
    expect(overview.status).toBe(200);
    const recent: { id: string; type: string; subjectId: string; createdAt: string }[] = overview.body.recent;
    expect(recent).toHaveLength(10);
    expect(recent[0]).toMatchObject({ type: "invoice.completed", subjectId: paid.at(-1) });
    const times = recent.map((r) => r.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const theirs = await stranger.call("GET", "/overview");
    expect(theirs.status).toBe(200);
    expect(theirs.body.recent.some((r: { subjectId: string }) => paid.includes(r.subjectId))).toBe(false);
  });
});

describe("payment link objects (product §25)", () => {
  it("creates, lists, deactivates links and lists their invoices; viewers read only; another merchant's is 404; audited", async () => {
    const made = await developer.call("POST", "/links", { currency: "USDT", minAmount: "5", maxAmount: "50" });
    expect(made.status).toBe(200);
    expect(made.body).toMatchObject({ currency: "USDT", min_amount: "5", max_amount: "50", active: true });
    expect(made.body.url).toBe(`${server.config.publicBaseUrl}/l/${made.body.id}`);
    const listed = await viewer.call("GET", "/links");
    expect(listed.body.data.map((l: { id: string }) => l.id)).toContain(made.body.id);
    expectProblem(await viewer.call("POST", "/links", { currency: "USDT", amount: "1" }), 403, "role_forbidden");
    expectProblem(await viewer.call("PATCH", `/links/${made.body.id}`, { active: false }), 403, "role_forbidden");
    expectProblem(await owner.call("POST", "/links", { currency: "USDT" }), 400, "payment_link_amount_invalid");
    const visit = await fetch(`${made.body.url}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "amount=7",
    });
    expect(visit.status).toBe(303);
    const invoices = await viewer.call("GET", `/links/${made.body.id}/invoices`);
    expect(invoices.body.data).toEqual([expect.objectContaining({ amount: "7", currency: "USDT", status: "pending" })]);
    expectProblem(await stranger.call("GET", `/links/${made.body.id}/invoices`), 404, "payment_link_not_found");
    expectProblem(
      await stranger.call("PATCH", `/links/${made.body.id}`, { active: false }),
      404,
      "payment_link_not_found",
    );
    const off = await owner.call("PATCH", `/links/${made.body.id}`, { active: false });
    expect(off.body.active).toBe(false);
    expect((await fetch(made.body.url, { redirect: "manual" })).status).toBe(410);
    const actions = await auditActions(owner);
    expect(actions).toContain("payment_link.create");
    expect(actions).toContain("payment_link.deactivate");
  });
});
