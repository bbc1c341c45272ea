// The sandbox payment lifecycle: payments, confirmations, AML, partial and over-payments, and the credit happening once.
import { describe, expect, it } from "vitest";
import { insertInvoice } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import {
  aml,
  balances,
  createInvoice,
  expectHealthyLedger,
  expectInvoiceShape,
  invoiceMovements,
  pay,
} from "../support/invoices.ts";
import { call, createMerchant, expectProblem, merchant, startTestServer } from "../support/server.ts";

const server = useTestServer();

/** A fresh merchant per test keeps balance expectations independent. 1% fee, paid by the merchant. */
async function freshMerchant(fields: Record<string, unknown> = {}) {
  return createMerchant(server, fields);
}

const getInvoice = (apiKey: string, id: string) => merchant(server, apiKey, "GET", `/public/v1/invoices/${id}`);

describe("on-chain payments", () => {
  it("completes on a confirmed payment of the full amount and credits merchant_receive_amount once", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 100 });
    const paid = await pay(server, m.apiKey, invoice.id, { fromAddress: "0xpayer" });
    expect(paid.status).toBe(200);
    expectInvoiceShape(paid.body);
    expect(paid.body).toMatchObject({ status: "completed", paid_amount: "100", api_source: null });
    expect(Date.parse(paid.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(invoice.updated_at));
    expect((await getInvoice(m.apiKey, invoice.id)).body).toEqual(paid.body);
    // 100 less 1% (1) less the network fee (1).
    expect((await balances(server, m.id)).USDT).toBe("98");
    expect(await invoiceMovements(server, invoice.id)).toHaveLength(1);
    await expectHealthyLedger(server);
  });

  it("goes to processing on an unconfirmed payment and completes when the same txId is confirmed", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "ETH", amount: "0.5" });
    const seen = await pay(server, m.apiKey, invoice.id, { txId: "0xabc", confirmed: false });
    expect(seen.body).toMatchObject({ status: "processing", paid_amount: "0.5" });
    expect((await balances(server, m.id)).ETH).toBe("0");
    const confirmed = await pay(server, m.apiKey, invoice.id, { txId: "0xabc", confirmed: true });
    expect(confirmed.body).toMatchObject({ status: "completed", paid_amount: "0.5" });
    // 0.5 less 0.005 fee less 0.0005 network fee.
    expect((await balances(server, m.id)).ETH).toBe("0.4945");
    // Delivered again: nothing changes, nothing is credited twice.
    const again = await pay(server, m.apiKey, invoice.id, { txId: "0xabc" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(confirmed.body);
    expect((await balances(server, m.id)).ETH).toBe("0.4945");
    expect(await invoiceMovements(server, invoice.id)).toHaveLength(1);
    await expectHealthyLedger(server);
  });

  it("collects partial payments until they cover final_amount", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 50 });
    const first = await pay(server, m.apiKey, invoice.id, { amount: "20" });
    expect(first.body).toMatchObject({ status: "processing", paid_amount: "20" });
    const second = await pay(server, m.apiKey, invoice.id, { amount: 10.5 });
    expect(second.body).toMatchObject({ status: "processing", paid_amount: "30.5" });
    // Without an amount the payer pays what is still due.
    const rest = await pay(server, m.apiKey, invoice.id);
    expect(rest.body).toMatchObject({ status: "completed", paid_amount: "50" });
    expect((await balances(server, m.id)).USDT).toBe("48.5");
    await expectHealthyLedger(server);
  });

  it("credits an overpayment to the merchant as well", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 100 });
    const paid = await pay(server, m.apiKey, invoice.id, { amount: "112.25" });
    expect(paid.body).toMatchObject({ status: "completed", paid_amount: "112.25" });
    expect((await balances(server, m.id)).USDT).toBe("110.25");
    await expectHealthyLedger(server);
  });

  it("counts unconfirmed payments in paid_amount but completes only on confirmed ones", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 30 });
    await pay(server, m.apiKey, invoice.id, { amount: 20, txId: "a", confirmed: false });
    const covered = await pay(server, m.apiKey, invoice.id, { amount: 10, txId: "b" });
    expect(covered.body).toMatchObject({ status: "processing", paid_amount: "30" });
    // Everything due is seen: a payment without an amount has nothing to pay.
    expectProblem(await pay(server, m.apiKey, invoice.id), 409, "nothing_due");
    const done = await pay(server, m.apiKey, invoice.id, { txId: "a" });
    expect(done.body).toMatchObject({ status: "completed", paid_amount: "30" });
    expect((await balances(server, m.id)).USDT).toBe("28.7");
  });

  it("completes with payments from several senders, and credits only confirmed ones at completion", async () => {
    const m = await freshMerchant({ feePercent: 0 });
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, invoice.id, { amount: 4, fromAddress: "0x1" });
    await pay(server, m.apiKey, invoice.id, { amount: 7, fromAddress: "0x2", confirmed: false });
    const done = await pay(server, m.apiKey, invoice.id, { amount: 6, fromAddress: null });
    expect(done.body).toMatchObject({ status: "completed", paid_amount: "17" });
    // Confirmed: 4 + 6 = 10 = final_amount; receive 9 (network fee 1), no overpayment among confirmed ones.
    expect((await balances(server, m.id)).USDT).toBe("9");
  });

  it("settles an autoconverted invoice in the autoconvert currency at the catalog rates", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 100, autoconvert: "EUR" });
    const paid = await pay(server, m.apiKey, invoice.id);
    expect(paid.body).toMatchObject({ status: "completed", settlement_currency: "EUR", convert_currency: "EUR" });
    const b = await balances(server, m.id);
    // 98 USDT at 1 USD, EUR at 1.08 USD: 90.7407... -> 90.74.
    expect(b.EUR).toBe("90.74");
    expect(b.USDT).toBe("0");
    await expectHealthyLedger(server);
  });
});

describe("card payments", () => {
  it("pays a fiat invoice through the sandbox card provider", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount: "19.99" });
    expect(invoice.api_source).toBeNull();
    const paid = await pay(server, m.apiKey, invoice.id);
    expect(paid.body).toMatchObject({ status: "completed", api_source: "sandbox_card", paid_amount: "19.99" });
    // 19.99 less 1% (0.1999 -> 0.20).
    expect((await balances(server, m.id)).EUR).toBe("19.79");
    const stored = await server.ctx.store.db
      .selectFrom("invoice_payments")
      .selectAll()
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ provider: "sandbox_card", from_address: null, confirmed: 1, aml_status: "none" });
  });

  it("refuses a sender address on a card payment", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USD", amount: 10 });
    expectProblem(
      await pay(server, m.apiKey, invoice.id, { fromAddress: "0xabc" }),
      400,
      "sender_address_not_applicable",
    );
    expect((await pay(server, m.apiKey, invoice.id, { fromAddress: null, confirmed: false })).body.status).toBe(
      "processing",
    );
  });
});

describe("AML screening", () => {
  it("holds a flagged payment in aml_check, then completes when screening clears it", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 40 });
    const flagged = await pay(server, m.apiKey, invoice.id, { amlFlag: true });
    expect(flagged.body).toMatchObject({ status: "aml_check", paid_amount: "40" });
    expect((await balances(server, m.id)).USDT).toBe("0");
    const cleared = await aml(server, m.apiKey, invoice.id, "clear");
    expect(cleared.status).toBe(200);
    expectInvoiceShape(cleared.body);
    expect(cleared.body).toMatchObject({ status: "completed", paid_amount: "40" });
    expect((await balances(server, m.id)).USDT).toBe("38.6");
    await expectHealthyLedger(server);
  });

  it("blocks: aml_block, the blocked funds are neither counted nor credited", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 40 });
    await pay(server, m.apiKey, invoice.id, { amlFlag: true, fromAddress: "0xdirty" });
    const blocked = await aml(server, m.apiKey, invoice.id, "block");
    expect(blocked.body).toMatchObject({ status: "aml_block", paid_amount: "0" });
    expect((await balances(server, m.id)).USDT).toBe("0");
    // The blocked payment is held in the operator's screening account (product §21), the same as in live mode.
    const movements = await invoiceMovements(server, invoice.id);
    expect(movements.map((mv) => mv.kind)).toEqual([expect.stringMatching(/^aml_block:/)]);
    const entries = await server.ctx.store.db
      .selectFrom("ledger_entries")
      .select(["account", "amount"])
      .where("movement_id", "=", movements[0]?.id as string)
      .orderBy("account")
      .execute();
    expect(entries).toEqual([
      { account: "external:incoming_payments", amount: "-40000000" },
      { account: "operator:screening_held", amount: "40000000" },
    ]);
    expectProblem(await pay(server, m.apiKey, invoice.id), 409, "invoice_not_payable");
  });

  it("returns a cleared partial payment to processing, and completes on the rest", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 40 });
    await pay(server, m.apiKey, invoice.id, { amount: 15 });
    expect((await pay(server, m.apiKey, invoice.id, { amount: 10, amlFlag: true })).body.status).toBe("aml_check");
    // Payments keep arriving while screening runs; the invoice waits for the decision.
    const during = await pay(server, m.apiKey, invoice.id, { amount: 5 });
    expect(during.body).toMatchObject({ status: "aml_check", paid_amount: "30" });
    const cleared = await aml(server, m.apiKey, invoice.id, "clear");
    expect(cleared.body).toMatchObject({ status: "processing", paid_amount: "30" });
    const done = await pay(server, m.apiKey, invoice.id);
    expect(done.body).toMatchObject({ status: "completed", paid_amount: "40" });
    expect((await balances(server, m.id)).USDT).toBe("38.6");
  });

  it("answers 409 for a decision on an invoice that is not in aml_check, and validates the decision", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 40 });
    expectProblem(await aml(server, m.apiKey, invoice.id, "clear"), 409, "invoice_not_in_aml_check");
    expectProblem(await aml(server, m.apiKey, invoice.id, "maybe"), 400, "validation_failed");
    expectProblem(
      await merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${invoice.id}/aml`, {
        decision: "clear",
        note: "x",
      }),
      400,
      "validation_failed",
    );
  });
});

describe("payments that cannot be taken", () => {
  it("refuses new payments to a completed invoice with 409 invoice_not_payable", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 40 });
    await pay(server, m.apiKey, invoice.id, { txId: "t1" });
    expectProblem(await pay(server, m.apiKey, invoice.id, { amount: 5 }), 409, "invoice_not_payable");
    expect((await balances(server, m.id)).USDT).toBe("38.6");
  });

  it("refuses a known txId with other details (409 payment_conflict)", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 40 });
    await pay(server, m.apiKey, invoice.id, { txId: "t1", amount: 10, fromAddress: "0x1", confirmed: false });
    expectProblem(await pay(server, m.apiKey, invoice.id, { txId: "t1", amount: 11 }), 409, "payment_conflict");
    expectProblem(await pay(server, m.apiKey, invoice.id, { txId: "t1", fromAddress: "0x2" }), 409, "payment_conflict");
    expectProblem(await pay(server, m.apiKey, invoice.id, { txId: "t1", amlFlag: true }), 409, "payment_conflict");
    // Same details, still unconfirmed: a harmless repeat.
    const same = await pay(server, m.apiKey, invoice.id, { txId: "t1", amount: "10.0", confirmed: false });
    expect(same.body).toMatchObject({ status: "processing", paid_amount: "10" });
    await pay(server, m.apiKey, invoice.id, { txId: "t1" });
    expectProblem(await pay(server, m.apiKey, invoice.id, { txId: "t1", confirmed: false }), 409, "payment_conflict");
  });

  it("validates the payment body with the amount codes", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount: 40 });
    expectProblem(await pay(server, m.apiKey, invoice.id, { amount: "1.001" }), 400, "amount_too_precise");
    expectProblem(await pay(server, m.apiKey, invoice.id, { amount: 0 }), 400, "amount_not_positive");
    expectProblem(await pay(server, m.apiKey, invoice.id, { amount: "-1" }), 400, "amount_negative");
    expectProblem(await pay(server, m.apiKey, invoice.id, { amount: "1e1" }), 400, "amount_exponent_not_allowed");
    expectProblem(await pay(server, m.apiKey, invoice.id, { amount: "ten" }), 400, "invalid_amount");
    expectProblem(await pay(server, m.apiKey, invoice.id, { confirmed: "yes" }), 400, "validation_failed");
    expectProblem(await pay(server, m.apiKey, invoice.id, { payer: "x" }), 400, "validation_failed");
    const nullBody = await call(server.baseUrl, "POST", `/sandbox/v1/invoices/${invoice.id}/payments`, {
      headers: { "x-api-key": m.apiKey, "content-type": "application/json" },
      rawBody: "null",
    });
    expectProblem(nullBody, 400, "validation_failed");
    expect((await getInvoice(m.apiKey, invoice.id)).body).toMatchObject({ status: "pending", paid_amount: "0" });
  });

  it("answers 404 for another merchant's invoice and for an unknown one, and 401 without a key", async () => {
    const m = await freshMerchant();
    const intruder = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 40 });
    expectProblem(await pay(server, intruder.apiKey, invoice.id), 404, "invoice_not_found");
    expectProblem(await aml(server, intruder.apiKey, invoice.id, "clear"), 404, "invoice_not_found");
    expectProblem(await pay(server, m.apiKey, "00000000-0000-4000-8000-000000000000"), 404, "invoice_not_found");
    expectProblem(
      await call(server.baseUrl, "POST", `/sandbox/v1/invoices/${invoice.id}/payments`, { body: {} }),
      401,
      "unauthorized",
    );
    expect((await getInvoice(m.apiKey, invoice.id)).body.status).toBe("pending");
  });
});

describe("races", () => {
  it("credits once when the confirming payment is delivered twice in parallel", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 100 });
    await pay(server, m.apiKey, invoice.id, { txId: "0xrace", confirmed: false });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => pay(server, m.apiKey, invoice.id, { txId: "0xrace", confirmed: true })),
    );
    for (const a of answers) {
      expect(a.status, a.text).toBe(200);
      expect(a.body.status).toBe("completed");
    }
    expect((await balances(server, m.id)).USDT).toBe("98");
    expect(await invoiceMovements(server, invoice.id)).toHaveLength(1);
    await expectHealthyLedger(server);
  });

  it("records a new transaction once when it arrives twice in parallel", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 100 });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => pay(server, m.apiKey, invoice.id, { txId: "0xtwin", fromAddress: "0xp" })),
    );
    for (const a of answers) expect(a.status, a.text).toBe(200);
    const stored = await server.ctx.store.db
      .selectFrom("invoice_payments")
      .select("id")
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(stored).toHaveLength(1);
    expect((await getInvoice(m.apiKey, invoice.id)).body).toMatchObject({ status: "completed", paid_amount: "100" });
    expect((await balances(server, m.id)).USDT).toBe("98");
  });

  it("completes once when distinct full payments race: the others find it no longer payable", async () => {
    const m = await freshMerchant();
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 100 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => pay(server, m.apiKey, invoice.id)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    for (const a of answers.filter((x) => x.status !== 200)) expectProblem(a, 409, "invoice_not_payable");
    expect((await balances(server, m.id)).USDT).toBe("98");
    expect(await invoiceMovements(server, invoice.id)).toHaveLength(1);
    await expectHealthyLedger(server);
  });
});

describe("sandbox in live mode", () => {
  it("does not exist: 404", async () => {
    const live = await startTestServer({ env: { SERVICE_MODE: "live" } });
    try {
      const m = await createMerchant(live);
      // Live mode takes no crypto invoice without a network (the gate): the invoice is written directly.
      const invoice = await insertInvoice(live, m.id, null);
      expectProblem(await pay(live, m.apiKey, invoice.id), 404, "not_found");
      expectProblem(await aml(live, m.apiKey, invoice.id, "clear"), 404, "not_found");
      const doc = (await call(live.baseUrl, "GET", "/openapi.json")).body;
      expect(Object.keys(doc.paths).some((p) => p.startsWith("/sandbox/"))).toBe(false);
    } finally {
      await live.close();
    }
  });
});
