// Payments around completion and expiry: late confirmations are credited once, refunds wait for them, expired invoices take no new money.
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { balances, createInvoice, expectHealthyLedger, pay } from "../support/invoices.ts";
import { feeFreeMerchant, refundCrypto } from "../support/refunds.ts";
import { expectProblem } from "../support/server.ts";

const server = useTestServer();

describe("a payment seen before completion and confirmed after it", () => {
  it("is credited once as an overpayment, and a refund waits for it", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "100" });
    expect(
      (await pay(server, m.apiKey, invoice.id, { txId: "0xlate", amount: "50", confirmed: false })).body.status,
    ).toBe("processing");
    const completed = await pay(server, m.apiKey, invoice.id, { txId: "0xmain", amount: "100", fromAddress: "0xp" });
    expect(completed.body.status).toBe("completed");
    expect(completed.body.paid_amount).toBe("150");
    // merchant_receive_amount 99 (100 less the 1 USDT network fee); the unconfirmed 50 is not credited yet.
    expect((await balances(server, m.id)).USDT).toBe("99");

    // Refunding now would pay out 150 of which 50 never arrived.
    const early = await refundCrypto(server, m, { invoiceId: invoice.id, address: "0xback" });
    expectProblem(early.answer, 400, "payments_unsettled");

    const confirmed = await pay(server, m.apiKey, invoice.id, { txId: "0xlate", confirmed: true });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("149");
    // The same confirmation delivered again credits nothing more.
    expect((await pay(server, m.apiKey, invoice.id, { txId: "0xlate", confirmed: true })).status).toBe(200);
    expect((await balances(server, m.id)).USDT).toBe("149");
    await expectHealthyLedger(server);

    // Now every payment is settled: the refund of paid_amount (150) is covered once 1 more USDT is there.
    const refused = await refundCrypto(server, m, { invoiceId: invoice.id, address: "0xback" });
    expectProblem(refused.answer, 400, "insufficient_balance");
  });

  it("credits a late payment in the settlement currency of an autoconverted invoice", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "108", autoconvert: "EUR" });
    await pay(server, m.apiKey, invoice.id, { txId: "0xa", amount: "10.8", confirmed: false });
    expect((await pay(server, m.apiKey, invoice.id, { txId: "0xb", amount: "108" })).body.status).toBe("completed");
    const before = (await balances(server, m.id)).EUR;
    await pay(server, m.apiKey, invoice.id, { txId: "0xa", confirmed: true });
    const after = (await balances(server, m.id)).EUR;
    // 10.8 USDT at 1 USD / 1.08 USD per EUR = 10 EUR.
    expect(Number(after) * 100 - Number(before) * 100).toBe(1000);
    await expectHealthyLedger(server);
  });
});

describe("payments after expires_at", () => {
  it("are refused even before the expiry worker runs; the worker then expires the invoice", async () => {
    const m = await feeFreeMerchant(server);
    const expiresAt = new Date(Date.now() + 1200).toISOString();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "10", expiresAt });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expectProblem(await pay(server, m.apiKey, invoice.id, {}), 409, "invoice_not_payable");
    expect((await balances(server, m.id)).USDT).toBe("0");
    await server.workers.loops.expiry!.runOnce();
    const answer = await pay(server, m.apiKey, invoice.id, {});
    expectProblem(answer, 409, "invoice_not_payable");
  });

  it("still confirm a payment seen before expiry", async () => {
    const m = await feeFreeMerchant(server);
    const expiresAt = new Date(Date.now() + 1200).toISOString();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "10", expiresAt });
    expect((await pay(server, m.apiKey, invoice.id, { txId: "0xseen", confirmed: false })).body.status).toBe(
      "processing",
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const confirmed = await pay(server, m.apiKey, invoice.id, { txId: "0xseen", confirmed: true });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.status).toBe("completed");
    await expectHealthyLedger(server);
  });
});
