// The SDK's calls of product §25 against the real service (SQLite and PostgreSQL): partial and claim refunds, payment links.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectHealthyLedger } from "../../../../test/support/invoices.ts";
import { adjust, completedInvoice, feeFreeMerchant } from "../../../../test/support/refunds.ts";
import { startTestServer, type TestServer } from "../../../../test/support/server.ts";
import { PaymentsApiError, PaymentsClient } from "../../src/index.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

describe("PaymentsClient, refunds and payment links", () => {
  it("creates partial and claim refunds, replays a request id, and refuses the over-refundable", async () => {
    const m = await feeFreeMerchant(server);
    const client = new PaymentsClient({ baseUrl: server.baseUrl, apiKey: m.apiKey, secretKey: m.secretKey });
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "100" });
    await adjust(server, m.id, "USDT", "5");
    const requestId = "5b0e5c1e-2f0a-4c55-9d7c-3a1d1f6e8a01";
    const partial = await client.createRefund(
      { invoiceId: invoice.id, type: "crypto", amount: "40", address: "0xreturn" },
      { requestId },
    );
    expect(partial.request).toMatchObject({ id: requestId, amount: "40", status: "processing" });
    expect(partial.claimUrl).toBeNull();
    expect(
      await client.createRefund(
        { invoiceId: invoice.id, type: "crypto", amount: "40", address: "0xreturn" },
        { requestId },
      ),
    ).toEqual(partial);
    const claim = await client.createRefund({ invoiceId: invoice.id, type: "crypto", amount: "20", claim: true });
    expect(claim.claimUrl).toMatch(/\/refund\/[A-Za-z0-9_-]{43}$/);
    const over = await client
      .createRefund({ invoiceId: invoice.id, type: "crypto", amount: "40.01", address: "0xreturn" })
      .catch((e: unknown) => e);
    expect(over).toBeInstanceOf(PaymentsApiError);
    expect((over as PaymentsApiError).code).toBe("amount_exceeds_refundable");
    await expectHealthyLedger(server);
  });

  it("creates, lists, reads and deactivates payment links", async () => {
    const m = await feeFreeMerchant(server);
    const client = new PaymentsClient({ baseUrl: server.baseUrl, apiKey: m.apiKey });
    const fixed = await client.createPaymentLink({ currency: "USDT", amount: "25", description: "Mug" });
    const open = await client.createPaymentLink({ currency: "USDT", minAmount: "5", maxAmount: "50" });
    expect(await client.getPaymentLink(fixed.id)).toEqual(fixed);
    const listed = [];
    for await (const link of client.listPaymentLinks({ limit: 1 })) listed.push(link.id);
    expect(listed).toEqual([open.id, fixed.id]);
    // A look makes nothing; the payer's Pay button (a form POST) makes the invoice.
    expect((await fetch(fixed.url, { redirect: "manual" })).status).toBe(200);
    expect(await client.listPaymentLinkInvoices(fixed.id)).toMatchObject({ data: [] });
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const visit = await fetch(fixed.url, { method: "POST", headers: form, body: "", redirect: "manual" });
    expect(visit.status).toBe(303);
    const invoices = await client.listPaymentLinkInvoices(fixed.id);
    expect(invoices.data).toHaveLength(1);
    expect(invoices.data[0]).toMatchObject({ currency: "USDT", amount: "25", status: "pending" });
    const off = await client.updatePaymentLink(fixed.id, { active: false });
    expect(off.active).toBe(false);
    expect((await fetch(fixed.url, { redirect: "manual" })).status).toBe(410);
  });
});
