// The SDK's API-extension methods against the real service (SQLite and PostgreSQL): reads, async-iterable lists, events.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { completedInvoice } from "../../../../test/support/refunds.ts";
import { admin, merchant, startTestServer, type TestServer } from "../../../../test/support/server.ts";
import { fundedMerchant } from "../../../../test/support/withdrawals.ts";
import { type Invoice, PaymentsApiError, PaymentsClient, type PaymentsEvent } from "../../src/index.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const clientFor = (m: { apiKey: string; secretKey: string }) =>
  new PaymentsClient({ baseUrl: server.baseUrl, apiKey: m.apiKey, secretKey: m.secretKey, maxRetries: 1 });

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("PaymentsClient, API extensions", () => {
  it("reads withdrawals and refunds in their current state", async () => {
    const m = await fundedMerchant(server, "500");
    const client = clientFor(m);
    const created = await client.createWithdrawal({ currency: "USDT", amount: "10", withdrawalMethodId: m.methodId });
    expect(await client.getWithdrawal(created.request.id)).toEqual(created);
    const settled = await merchant(server, m.apiKey, "POST", `/sandbox/v1/payouts/${created.request.id}/outcome`, {
      status: "failed",
    });
    expect(settled.status).toBe(200);
    const read = await client.getWithdrawal(created.request.id);
    expect(read.request.status).toBe("failed");
    expect(read).toEqual(settled.body);

    const paid = await completedInvoice(server, m, { currency: "USDT", amount: "40" });
    const refund = await client.refundCrypto({ invoiceId: paid.id, address: "0xrefund" });
    expect(await client.getRefund(refund.request.id)).toEqual(refund);

    const other = await fundedMerchant(server, "0");
    const missing = await clientFor(other)
      .getWithdrawal(created.request.id)
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(PaymentsApiError);
    expect((missing as PaymentsApiError).status).toBe(404);
    expect((missing as PaymentsApiError).code).toBe("withdrawal_not_found");
  });

  it("iterates every page of a list, newest first, with filters", async () => {
    const m = await fundedMerchant(server, "500");
    const client = clientFor(m);
    const made: Invoice[] = [];
    for (let i = 0; i < 7; i++) made.push(await client.createInvoice({ currency: "USDT", amount: String(10 + i) }));
    const iterated = await all(client.listInvoices({ limit: 2 }));
    const page = await client.listInvoicesPage({ limit: 100 });
    expect(page.has_more).toBe(false);
    expect(iterated.map((i) => i.id)).toEqual(page.data.map((i) => i.id));
    expect(new Set(iterated.map((i) => i.id))).toEqual(new Set(made.map((i) => i.id)));
    expect(iterated[0]).toEqual(await client.getInvoice(iterated[0]!.id));
    // starting_after resumes after an item; a filter narrows every page.
    expect((await all(client.listInvoices({ limit: 3, starting_after: iterated[2]!.id }))).map((i) => i.id)).toEqual(
      iterated.slice(3).map((i) => i.id),
    );
    expect(await all(client.listInvoices({ status: "completed" }))).toEqual([]);
    // A payment link's invoices, without the abandoned ones.
    const link = await client.createPaymentLink({ currency: "USDT", amount: "5" });
    const pressed = await fetch(link.url, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "",
    });
    expect(pressed.status).toBe(303);
    const ofLink = await all(client.listInvoices({ paymentLinkId: link.id, abandoned: false }));
    expect(pressed.headers.get("location")).toContain(`/pay/${ofLink[0]?.id}?`);
    expect(ofLink).toHaveLength(1);
    expect(await all(client.listInvoices({ paymentLinkId: link.id, abandoned: true }))).toEqual([]);
    const withdrawal = await client.createWithdrawal({
      currency: "USDT",
      amount: "10",
      withdrawalMethodId: m.methodId,
    });
    expect((await all(client.listWithdrawals({ status: "processing" }))).map((w) => w.id)).toEqual([
      withdrawal.request.id,
    ]);
    expect(await all(client.listRefunds())).toEqual([]);

    const refused = await client.listInvoicesPage({ starting_after: "not-mine" }).catch((e: unknown) => e);
    expect((refused as PaymentsApiError).code).toBe("starting_after_not_found");
    expect((refused as PaymentsApiError).status).toBe(400);
  });

  it("lists events as typed objects, exactly as the callbacks carry them", async () => {
    const m = await fundedMerchant(server, "500");
    const client = clientFor(m);
    await admin(server, "PUT", `/merchants/${m.id}/default-callback-url`, { callbackUrl: null });
    const paid = await completedInvoice(server, m, { currency: "USDT", amount: "30" });
    const withdrawal = await client.createWithdrawal({
      currency: "USDT",
      amount: "10",
      withdrawalMethodId: m.methodId,
    });
    await merchant(server, m.apiKey, "POST", `/sandbox/v1/payouts/${withdrawal.request.id}/outcome`, {
      status: "completed",
    });
    const events: PaymentsEvent[] = await all(client.listEvents({ limit: 1 }));
    expect(events.map((e) => e.type)).toEqual(["withdrawal.completed", "invoice.completed"]);
    const [done, completed] = events;
    if (done?.type !== "withdrawal.completed" || completed?.type !== "invoice.completed") throw new Error("types");
    expect(done.data.request).toEqual((await client.getWithdrawal(withdrawal.request.id)).request);
    expect(completed.data.invoice.id).toBe(paid.id);
    expect((await all(client.listEvents({ type: "invoice.completed" }))).map((e) => e.id)).toEqual([completed.id]);
    expect(await all(client.listEvents({ created_lt: "2000-01-01T00:00:00Z" }))).toEqual([]);
  });
});
