// RefundCrypto and RefundFiat: accepted answers and amounts, every business rule with its code, signing and safe retries, payout settlement, concurrency.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { balances, createInvoice, expectHealthyLedger, pay } from "../support/invoices.ts";
import {
  adjust,
  callbackTypes,
  completedInvoice,
  feeFreeMerchant,
  invoiceStatus,
  movementEntries,
  payoutOutcome,
  REFUND_CRYPTO_PATH,
  REFUND_FIAT_PATH,
  REFUND_KEYS,
  type RefundMerchant,
  RFC3339_MS,
  refundCrypto,
  refundFiat,
} from "../support/refunds.ts";
import {
  admin,
  createMerchant,
  expectProblem,
  startTestServer,
  storeKind,
  type TestServer,
} from "../support/server.ts";
import { nowSeconds, type SignedCall } from "../support/signing.ts";
import { movementCount, withdraw } from "../support/withdrawals.ts";

const server = useTestServer();

const merchantAccount = (m: RefundMerchant) => `merchant:${m.id}`;

/** Whether the store holds anything for a request id (a 400 must leave nothing). */
async function recorded(requestId: string): Promise<boolean> {
  const row = await server.ctx.store.db
    .selectFrom("signed_requests")
    .select("request_id")
    .where("request_id", "=", requestId.toLowerCase())
    .executeTakeFirst();
  return row !== undefined;
}

/** A USDT invoice autoconverted to EUR whose paid_amount (99.9918 USDT) is worth 92.585 EUR: 92.59 rounded half up. */
async function autoconvertedInvoice(m: RefundMerchant, fromAddress = "0xpayer-autoconvert") {
  return completedInvoice(server, m, { currency: "USDT", amount: "99.9918", autoconvert: "EUR" }, [{ fromAddress }]);
}

describe("RefundCrypto, accepted", () => {
  it("refunds paid_amount to the sender (withdrawToSameAddress), debits it and moves the invoice to refund_processing", async () => {
    const m = await createMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "100" }, [
      { fromAddress: "0xpayer1" },
    ]);
    // 100 less the 1% fee and the 1 USDT network fee: the merchant holds less than the refund.
    expect((await balances(server, m.id)).USDT).toBe("98");
    const body = { invoiceId: invoice.id, withdrawToSameAddress: true, reason: "goods returned" };
    expectProblem((await refundCrypto(server, m, body)).answer, 400, "insufficient_balance");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("completed");

    await adjust(server, m.id, "USDT", "2");
    const { answer, requestId } = await refundCrypto(server, m, body);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
    expect(Object.keys(answer.body)).toEqual(["request"]);
    expect(Object.keys(answer.body.request)).toEqual(REFUND_KEYS);
    expect(answer.body.request).toEqual({
      id: requestId,
      invoice_id: invoice.id,
      type: "crypto",
      currency: "USDT",
      amount: "100",
      to_address: "0xpayer1",
      withdraw_to_same_address: true,
      status: "processing",
      payout_processor_status: null,
      payout_processor_tx_id: null,
      created_at: expect.stringMatching(RFC3339_MS),
      updated_at: answer.body.request.created_at,
    });
    expect((await balances(server, m.id)).USDT).toBe("0");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refund_processing");
    expect(await movementEntries(server, requestId, "debit")).toEqual(
      [`${merchantAccount(m)} USDT -100000000`, "external:payouts USDT 100000000"].sort(),
    );
    await expectHealthyLedger(server);
  });

  it("refunds to an explicit address; withdrawToSameAddress: false with an address is the address form", async () => {
    const m = await feeFreeMerchant(server);
    // Two incoming transactions: only an explicit address can say where the refund goes.
    const invoice = await completedInvoice(server, m, { currency: "USDC", amount: "50" }, [
      { amount: "20", fromAddress: "0xfirst" },
      { amount: "30", fromAddress: "0xsecond" },
    ]);
    await adjust(server, m.id, "USDC", "1");
    const { answer } = await refundCrypto(server, m, {
      invoiceId: invoice.id,
      address: "0xdestination",
      withdrawToSameAddress: false,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.request).toMatchObject({
      type: "crypto",
      currency: "USDC",
      amount: "50",
      to_address: "0xdestination",
      withdraw_to_same_address: false,
    });
    expect((await balances(server, m.id)).USDC).toBe("0");
  });

  it("refunds an overpayment in full: the refund is paid_amount, not amount", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "50" }, [{ amount: "60.5" }]);
    expect(invoice.paid_amount).toBe("60.5");
    // Credited 60.5 less the 1 USDT network fee.
    await adjust(server, m.id, "USDT", "1");
    const { answer } = await refundCrypto(server, m, { invoiceId: invoice.id, address: "0xback" });
    expect(answer.status).toBe(200);
    expect(answer.body.request.amount).toBe("60.5");
    expect((await balances(server, m.id)).USDT).toBe("0");
  });

  it("refunds an autoconverted invoice in its payment currency and debits the converted value in the settlement currency", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await autoconvertedInvoice(m, "0xpayer-usdt");
    // Credited 98.9918 USDT (less the network fee) converted: 91.659... EUR, 91.66 rounded half up.
    expect(await balances(server, m.id)).toMatchObject({ EUR: "91.66" });
    expectProblem(
      (await refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true })).answer,
      400,
      "insufficient_balance",
    );
    await adjust(server, m.id, "EUR", "0.93");
    const { answer, requestId } = await refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true });
    expect(answer.status).toBe(200);
    expect(answer.body.request).toMatchObject({
      type: "crypto",
      currency: "USDT",
      amount: "99.9918",
      to_address: "0xpayer-usdt",
      withdraw_to_same_address: true,
    });
    expect((await balances(server, m.id)).EUR).toBe("0");
    // The EUR debit buys the USDT payout at the conversion desk, one balanced leg per currency.
    expect(await movementEntries(server, requestId, "debit")).toEqual(
      [
        `${merchantAccount(m)} EUR -9259`,
        "external:conversion EUR 9259",
        "external:conversion USDT -99991800",
        "external:payouts USDT 99991800",
      ].sort(),
    );
    await expectHealthyLedger(server);
  });
});

describe("RefundFiat, accepted", () => {
  it("refunds an EUR invoice in EUR, with no address", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "EUR", amount: "100" });
    expect(invoice.api_source).toBe("sandbox_card");
    expect((await balances(server, m.id)).EUR).toBe("100");
    const { answer, requestId } = await refundFiat(server, m, { invoiceId: invoice.id, reason: "cancelled order" });
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body.request)).toEqual(REFUND_KEYS);
    expect(answer.body.request).toEqual({
      id: requestId,
      invoice_id: invoice.id,
      type: "fiat",
      currency: "EUR",
      amount: "100",
      to_address: null,
      withdraw_to_same_address: false,
      status: "processing",
      payout_processor_status: null,
      payout_processor_tx_id: null,
      created_at: expect.stringMatching(RFC3339_MS),
      updated_at: answer.body.request.created_at,
    });
    expect((await balances(server, m.id)).EUR).toBe("0");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refund_processing");
    await expectHealthyLedger(server);
  });

  it("refunds an autoconverted crypto invoice in its fiat settlement currency: paid_amount converted, rounded half up", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await autoconvertedInvoice(m);
    expect(invoice.settlement_currency).toBe("EUR");
    expectProblem((await refundFiat(server, m, { invoiceId: invoice.id })).answer, 400, "insufficient_balance");
    await adjust(server, m.id, "EUR", "0.93");
    const { answer, requestId } = await refundFiat(server, m, { invoiceId: invoice.id });
    expect(answer.status).toBe(200);
    expect(answer.body.request).toMatchObject({
      type: "fiat",
      currency: "EUR",
      amount: "92.59",
      to_address: null,
      withdraw_to_same_address: false,
    });
    expect((await balances(server, m.id)).EUR).toBe("0");
    expect(await movementEntries(server, requestId, "debit")).toEqual(
      [`${merchantAccount(m)} EUR -9259`, "external:payouts EUR 9259"].sort(),
    );
    await expectHealthyLedger(server);
  });
});

describe("business rules (400, each with its own code, nothing recorded)", () => {
  /** Sends a refund twice with one request id: refused both times, so the first recorded nothing. */
  async function refused(send: (requestId: string) => Promise<SignedCall>, code: string): Promise<SignedCall> {
    const requestId = randomUUID();
    const first = await send(requestId);
    expectProblem(first.answer, 400, code);
    expect(first.answer.body.errors?.[0]?.pointer).toMatch(/^\//);
    expect(await recorded(requestId)).toBe(false);
    const again = await send(requestId);
    expectProblem(again.answer, 400, code);
    return first;
  }
  const crypto = (m: RefundMerchant, body: Record<string, unknown>) => (requestId: string) =>
    refundCrypto(server, m, body, { requestId, timestamp: nowSeconds() });
  const fiat = (m: RefundMerchant, body: Record<string, unknown>) => (requestId: string) =>
    refundFiat(server, m, body, { requestId, timestamp: nowSeconds() });

  it("the invoice must belong to the merchant; another merchant's invoice answers exactly as an unknown one", async () => {
    const m = await feeFreeMerchant(server);
    const other = await feeFreeMerchant(server);
    const theirs = await autoconvertedInvoice(other);
    await adjust(server, m.id, "EUR", "1000");
    const unknownId = randomUUID();
    const unknown = await refused(fiat(m, { invoiceId: unknownId }), "refund_invoice_not_found");
    const foreign = await refused(fiat(m, { invoiceId: theirs.id }), "refund_invoice_not_found");
    expect(foreign.answer.text).toBe(unknown.answer.text);
    expect(foreign.answer.text).not.toContain(theirs.id);
    await refused(crypto(m, { invoiceId: theirs.id, address: "0xme" }), "refund_invoice_not_found");
    await refused(crypto(m, { invoiceId: "not-an-invoice-id", address: "0xme" }), "refund_invoice_not_found");
    expect(await invoiceStatus(server, other, theirs.id)).toBe("completed");
  });

  it("the merchant must be active", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "EUR", amount: "20" });
    expect((await admin(server, "PATCH", `/merchants/${m.id}`, { status: "suspended" })).status).toBe(200);
    await refused(fiat(m, { invoiceId: invoice.id }), "merchant_not_active");
    await refused(crypto(m, { invoiceId: invoice.id, address: "0xa" }), "merchant_not_active");
    expect((await admin(server, "PATCH", `/merchants/${m.id}`, { status: "active" })).status).toBe(200);
    expect((await refundFiat(server, m, { invoiceId: invoice.id })).answer.status).toBe(200);
  });

  it("a crypto refund needs a non-fiat payment currency; a fiat refund needs a fiat settlement currency", async () => {
    const m = await feeFreeMerchant(server);
    await adjust(server, m.id, "USDT", "1000");
    await adjust(server, m.id, "EUR", "1000");
    const eur = await completedInvoice(server, m, { currency: "EUR", amount: "10" });
    const usdt = await completedInvoice(server, m, { currency: "USDT", amount: "10" }, [{ fromAddress: "0xp" }]);
    const eurToUsdt = await completedInvoice(server, m, { currency: "EUR", amount: "10", autoconvert: "USDT" });
    await refused(crypto(m, { invoiceId: eur.id, address: "0xa" }), "invoice_currency_is_fiat");
    await refused(fiat(m, { invoiceId: usdt.id }), "settlement_not_fiat");
    // Paid in fiat, settled in crypto: neither kind of refund applies.
    await refused(crypto(m, { invoiceId: eurToUsdt.id, address: "0xa" }), "invoice_currency_is_fiat");
    await refused(fiat(m, { invoiceId: eurToUsdt.id }), "settlement_not_fiat");
    // The kind of refund is decided before the status: a pending EUR invoice is still not for RefundCrypto.
    const pending = await createInvoice(server, m.apiKey, { currency: "EUR", amount: "10" });
    await refused(crypto(m, { invoiceId: pending.id, address: "0xa" }), "invoice_currency_is_fiat");
  });

  it("the invoice must be completed", async () => {
    const m = await feeFreeMerchant(server);
    await adjust(server, m.id, "EUR", "1000");
    await adjust(server, m.id, "USDT", "1000");
    const pending = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "10", autoconvert: "EUR" });
    await refused(fiat(m, { invoiceId: pending.id }), "invoice_not_completed");
    await refused(crypto(m, { invoiceId: pending.id, address: "0xa" }), "invoice_not_completed");
    const partly = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    expect((await pay(server, m.apiKey, partly.id, { amount: "4", fromAddress: "0xp" })).body.status).toBe(
      "processing",
    );
    await refused(crypto(m, { invoiceId: partly.id, withdrawToSameAddress: true }), "invoice_not_completed");
    const flagged = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    expect((await pay(server, m.apiKey, flagged.id, { amlFlag: true })).body.status).toBe("aml_check");
    await refused(crypto(m, { invoiceId: flagged.id, address: "0xa" }), "invoice_not_completed");
  });

  it("the invoice must have no processing or completed refund, whichever route asks", async () => {
    const m = await feeFreeMerchant(server);
    await adjust(server, m.id, "EUR", "1000");
    const invoice = await autoconvertedInvoice(m);
    expect((await refundFiat(server, m, { invoiceId: invoice.id })).answer.status).toBe(200);
    await refused(fiat(m, { invoiceId: invoice.id }), "refund_exists");
    await refused(crypto(m, { invoiceId: invoice.id, withdrawToSameAddress: true }), "refund_exists");
    const live = await server.ctx.store.db
      .selectFrom("refunds")
      .select("status")
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(live).toEqual([{ status: "processing" }]);
  });

  it("withdrawToSameAddress: true needs exactly one incoming transaction, with a sender address", async () => {
    const m = await feeFreeMerchant(server);
    await adjust(server, m.id, "USDT", "1000");
    const anonymous = await completedInvoice(server, m, { currency: "USDT", amount: "10" }, [{ fromAddress: null }]);
    await refused(crypto(m, { invoiceId: anonymous.id, withdrawToSameAddress: true }), "sender_address_unavailable");
    // Two transactions, even from one address, are not "exactly one".
    const twice = await completedInvoice(server, m, { currency: "USDT", amount: "10" }, [
      { amount: "4", fromAddress: "0xsame" },
      { amount: "6", fromAddress: "0xsame" },
    ]);
    await refused(crypto(m, { invoiceId: twice.id, withdrawToSameAddress: true }), "sender_address_unavailable");
    // An explicit address still refunds either.
    expect((await refundCrypto(server, m, { invoiceId: twice.id, address: "0xsame" })).answer.status).toBe(200);
    expect((await refundCrypto(server, m, { invoiceId: anonymous.id, address: "0xany" })).answer.status).toBe(200);
  });

  it("RefundCrypto needs exactly one destination form; that is decided first, from the body alone", async () => {
    const m = await feeFreeMerchant(server);
    await adjust(server, m.id, "USDT", "1000");
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "10" }, [{ fromAddress: "0xp" }]);
    await refused(
      crypto(m, { invoiceId: invoice.id, address: "0xa", withdrawToSameAddress: true }),
      "refund_destination_ambiguous",
    );
    await refused(crypto(m, { invoiceId: invoice.id }), "refund_destination_missing");
    await refused(crypto(m, { invoiceId: invoice.id, withdrawToSameAddress: false }), "refund_destination_missing");
    await refused(crypto(m, { invoiceId: randomUUID() }), "refund_destination_missing");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("completed");
  });

  it("the balance must cover the refund: a merchant who withdrew the invoice's funds cannot refund it", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "EUR", amount: "100" });
    const method = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
      currency: "EUR",
      address: "DE89370400440532013000",
    });
    expect(method.status).toBe(200);
    const withdrawal = await withdraw(
      server,
      { ...m, methodId: method.body.id },
      { currency: "EUR", amount: "60", withdrawalMethodId: method.body.id },
    );
    expect(withdrawal.answer.status).toBe(200);
    expect((await balances(server, m.id)).EUR).toBe("40");
    await refused(fiat(m, { invoiceId: invoice.id }), "insufficient_balance");
    expect((await balances(server, m.id)).EUR).toBe("40");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("completed");
    await expectHealthyLedger(server);
  });

  it("refuses bodies outside the schema with validation_failed, recording nothing", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "EUR", amount: "10" });
    await refused(fiat(m, { invoiceId: invoice.id, address: "0xa" }), "validation_failed");
    await refused(fiat(m, { invoiceId: invoice.id, withdrawToSameAddress: false }), "validation_failed");
    await refused(fiat(m, {}), "validation_failed");
    await refused(fiat(m, { invoiceId: 42 }), "validation_failed");
    await refused(crypto(m, { invoiceId: invoice.id, address: "0xa", amount: "1" }), "validation_failed");
    await refused(crypto(m, { invoiceId: invoice.id, withdrawToSameAddress: "true" }), "validation_failed");
    await refused(crypto(m, { invoiceId: invoice.id, address: "" }), "validation_failed");
    await refused(crypto(m, { invoiceId: invoice.id, address: "0xa", reason: 7 }), "validation_failed");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("completed");
  });

  it("lets a refused request id succeed once the refund is possible", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await autoconvertedInvoice(m);
    const requestId = randomUUID();
    expectProblem(
      (await refundFiat(server, m, { invoiceId: invoice.id }, { requestId })).answer,
      400,
      "insufficient_balance",
    );
    await adjust(server, m.id, "EUR", "0.93");
    const accepted = await refundFiat(server, m, { invoiceId: invoice.id }, { requestId });
    expect(accepted.answer.status).toBe(200);
    expect(accepted.answer.body.request.id).toBe(requestId);
  });
});

describe("signing and safe retries on the refund routes", () => {
  let m: RefundMerchant;
  beforeAll(async () => {
    m = await feeFreeMerchant(server);
    await adjust(server, m.id, "EUR", "10000");
  });

  it("401 without a key, with a bad signature, or with a signature for the other refund route", async () => {
    const invoice = await autoconvertedInvoice(m);
    const body = { invoiceId: invoice.id };
    expectProblem((await refundFiat(server, m, body, { headers: { "x-api-key": null } })).answer, 401, "unauthorized");
    expectProblem(
      (await refundFiat(server, m, body, { headers: { "x-service-request-signature": null } })).answer,
      401,
      "invalid_signature_format",
    );
    expectProblem(
      (await refundFiat(server, m, body, { signature: `v1=${"ab".repeat(32)}` })).answer,
      401,
      "invalid_signature",
    );
    expectProblem(
      (await refundFiat(server, m, body, { signedPath: REFUND_CRYPTO_PATH })).answer,
      401,
      "invalid_signature",
    );
    expectProblem(
      (await refundCrypto(server, m, { ...body, address: "0xa" }, { signedPath: REFUND_FIAT_PATH })).answer,
      401,
      "invalid_signature",
    );
    expectProblem(
      (await refundCrypto(server, m, { ...body, address: "0xa" }, { timestamp: nowSeconds(-400) })).answer,
      401,
      "invalid_timestamp",
    );
    expect(await invoiceStatus(server, m, invoice.id)).toBe("completed");
  });

  it("403 for a legacy key, which has no secret to sign with", async () => {
    const invoice = await autoconvertedInvoice(m);
    const legacy = await admin(server, "POST", `/merchants/${m.id}/api-keys`, { legacy: true });
    expect(legacy.body.secretKey).toBeNull();
    const asLegacy = { ...m, apiKey: legacy.body.apiKey };
    expectProblem(
      (await refundFiat(server, asLegacy, { invoiceId: invoice.id })).answer,
      403,
      "api_key_reissue_required",
    );
    expectProblem(
      (await refundCrypto(server, asLegacy, { invoiceId: invoice.id, address: "0xa" })).answer,
      403,
      "api_key_reissue_required",
    );
    expect(await invoiceStatus(server, m, invoice.id)).toBe("completed");
  });

  it("replays the original response byte for byte with a fresh timestamp, and debits once", async () => {
    const fresh = await feeFreeMerchant(server);
    const invoice = await autoconvertedInvoice(fresh, "0xreplay");
    await adjust(server, fresh.id, "EUR", "0.93");
    const body = { invoiceId: invoice.id, withdrawToSameAddress: true };
    const first = await refundCrypto(server, fresh, body);
    expect(first.answer.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const retry = await refundCrypto(server, fresh, body, { requestId: first.requestId, timestamp: nowSeconds(-200) });
    expect(retry.signature).not.toBe(first.signature);
    expect(retry.answer.status).toBe(200);
    expect(retry.answer.text).toBe(first.answer.text);
    // The same canonical body in another spelling is the same request.
    const rawBody = `{ "withdrawToSameAddress": true, "invoiceId": "${invoice.id}" }`;
    const respelled = await refundCrypto(server, fresh, {}, { requestId: first.requestId.toUpperCase(), rawBody });
    expect(respelled.answer.text).toBe(first.answer.text);
    expect(await movementCount(server, first.requestId, "debit")).toBe(1);
    expect((await balances(server, fresh.id)).EUR).toBe("0");
  });

  it("409 for the same request id with another body, on the other refund route, or from a withdrawal", async () => {
    const invoice = await autoconvertedInvoice(m);
    const first = await refundFiat(server, m, { invoiceId: invoice.id });
    expect(first.answer.status).toBe(200);
    const requestId = first.requestId;
    const withReason = await refundFiat(server, m, { invoiceId: invoice.id, reason: "x" }, { requestId });
    expectProblem(withReason.answer, 409, "request_id_reused");
    // The identical body on RefundCrypto: the route is part of what a request id names.
    const otherRoute = await refundCrypto(server, m, { invoiceId: invoice.id }, { requestId });
    expectProblem(otherRoute.answer, 409, "request_id_reused");
    // Reuse is judged before the body schema: an invalid body is still a 409.
    const invalid = await refundFiat(server, m, { invoiceId: invoice.id, extra: true }, { requestId });
    expectProblem(invalid.answer, 409, "request_id_reused");

    const withdrawer = await feeFreeMerchant(server);
    await adjust(server, withdrawer.id, "USDT", "100");
    const method = await admin(server, "POST", `/merchants/${withdrawer.id}/withdrawal-methods`, {
      currency: "USDT",
      address: "0xwithdraw",
    });
    const withdrawal = await withdraw(server, { ...withdrawer, methodId: method.body.id });
    expect(withdrawal.answer.status).toBe(200);
    const other = await completedInvoice(server, withdrawer, { currency: "EUR", amount: "10" });
    const reused = await refundFiat(server, withdrawer, { invoiceId: other.id }, { requestId: withdrawal.requestId });
    expectProblem(reused.answer, 409, "request_id_reused");
    expect(await invoiceStatus(server, withdrawer, other.id)).toBe("completed");
    expect(await movementCount(server, requestId, "debit")).toBe(1);
  });

  it("409 that reveals nothing for another merchant's request id", async () => {
    const invoice = await autoconvertedInvoice(m);
    const first = await refundFiat(server, m, { invoiceId: invoice.id });
    const stranger = await feeFreeMerchant(server);
    const theirs = await completedInvoice(server, stranger, { currency: "EUR", amount: "10" });
    const answer = (await refundFiat(server, stranger, { invoiceId: theirs.id }, { requestId: first.requestId }))
      .answer;
    expectProblem(answer, 409, "request_id_unavailable");
    expect(answer.text).not.toContain(invoice.id);
    expect(await invoiceStatus(server, stranger, theirs.id)).toBe("completed");
  });
});

describe("payout settlement", () => {
  it("completed: the refund is completed, the invoice refunded, callbacks recorded, and no new refund is possible", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(
      server,
      m,
      { currency: "USDT", amount: "25", callbackUrl: "http://127.0.0.1:9/callbacks" },
      [{ fromAddress: "0xsettle" }],
    );
    await adjust(server, m.id, "USDT", "1");
    const first = await refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true });
    expect(first.answer.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 5));

    const settled = await payoutOutcome(server, m, first.requestId, { status: "completed", txId: "0xrefund-tx" });
    expect(settled.status).toBe(200);
    expect(Object.keys(settled.body)).toEqual(["request"]);
    expect(Object.keys(settled.body.request)).toEqual(REFUND_KEYS);
    expect(settled.body.request).toEqual({
      ...first.answer.body.request,
      status: "completed",
      payout_processor_status: "confirmed",
      payout_processor_tx_id: "0xrefund-tx",
      updated_at: expect.stringMatching(RFC3339_MS),
    });
    expect(Date.parse(settled.body.request.updated_at)).toBeGreaterThan(
      Date.parse(first.answer.body.request.created_at),
    );
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refunded");
    expect(await callbackTypes(server, invoice.id)).toEqual([
      "invoice.completed",
      "invoice.refund_processing",
      "invoice.refunded",
    ]);
    expect((await balances(server, m.id)).USDT).toBe("0");

    expectProblem(
      (await refundCrypto(server, m, { invoiceId: invoice.id, address: "0xagain" })).answer,
      400,
      "refund_exists",
    );
    expectProblem(await payoutOutcome(server, m, first.requestId, { status: "failed" }), 409, "payout_already_settled");
    // A retry still answers the original response.
    const retry = await refundCrypto(
      server,
      m,
      { invoiceId: invoice.id, withdrawToSameAddress: true },
      {
        requestId: first.requestId,
      },
    );
    expect(retry.answer.text).toBe(first.answer.text);
    await expectHealthyLedger(server);
  });

  it("failed: the debit comes back, the invoice is completed again, and a new refund is then accepted", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(
      server,
      m,
      { currency: "USDT", amount: "99.9918", autoconvert: "EUR", callbackUrl: "http://127.0.0.1:9/callbacks" },
      [{ fromAddress: "0xfail" }],
    );
    await adjust(server, m.id, "EUR", "0.93");
    const first = await refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true });
    expect(first.answer.status).toBe(200);
    expect((await balances(server, m.id)).EUR).toBe("0");

    const failed = await payoutOutcome(server, m, first.requestId, { status: "failed" });
    expect(failed.status).toBe(200);
    expect(failed.body.request).toMatchObject({
      id: first.requestId,
      status: "failed",
      payout_processor_status: "rejected",
      payout_processor_tx_id: null,
    });
    expect((await balances(server, m.id)).EUR).toBe("92.59");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("completed");
    // The reversal negates both legs of the converted debit exactly.
    const debit = await movementEntries(server, first.requestId, "debit");
    const reversal = await movementEntries(server, first.requestId, "reversal");
    const negated = debit
      .map((line) => {
        const [account, currency, amount] = line.split(" ");
        return `${account} ${currency} ${(-BigInt(amount ?? "0")).toString()}`;
      })
      .sort();
    expect(reversal).toEqual(negated);
    expect(await callbackTypes(server, invoice.id)).toEqual([
      "invoice.completed",
      "invoice.refund_processing",
      "invoice.completed",
    ]);

    const second = await refundFiat(server, m, { invoiceId: invoice.id });
    expect(second.answer.status).toBe(200);
    expect(second.answer.body.request).toMatchObject({ type: "fiat", currency: "EUR", amount: "92.59" });
    expect((await balances(server, m.id)).EUR).toBe("0");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refund_processing");
    const retry = await refundCrypto(
      server,
      m,
      { invoiceId: invoice.id, withdrawToSameAddress: true },
      {
        requestId: first.requestId,
      },
    );
    expect(retry.answer.text).toBe(first.answer.text);
    await expectHealthyLedger(server);
  });
});

describe("concurrency", () => {
  it("performs parallel identical refunds once", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await autoconvertedInvoice(m);
    await adjust(server, m.id, "EUR", "1000");
    const requestId = randomUUID();
    const calls = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        refundFiat(
          server,
          m,
          { invoiceId: invoice.id },
          { requestId: i % 2 === 0 ? requestId : requestId.toUpperCase() },
        ),
      ),
    );
    const ok = calls.filter((c) => c.answer.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const c of calls.filter((c) => c.answer.status !== 200)) expectProblem(c.answer, 409, "request_in_progress");
    expect(new Set(ok.map((c) => c.answer.text)).size).toBe(1);
    expect(await movementCount(server, requestId, "debit")).toBe(1);
    expect((await balances(server, m.id)).EUR).toBe("999.07");
    await expectHealthyLedger(server);
  });

  it("accepts exactly one of many parallel refunds of one invoice under different request ids, on both routes", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await autoconvertedInvoice(m, "0xrace");
    await adjust(server, m.id, "EUR", "1000");
    const calls = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        i % 2 === 0
          ? refundFiat(server, m, { invoiceId: invoice.id })
          : refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true }),
      ),
    );
    expect(calls.filter((c) => c.answer.status === 200)).toHaveLength(1);
    for (const c of calls.filter((c) => c.answer.status !== 200)) expectProblem(c.answer, 400, "refund_exists");
    const rows = await server.ctx.store.db
      .selectFrom("refunds")
      .select("status")
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(rows).toEqual([{ status: "processing" }]);
    expect((await balances(server, m.id)).EUR).toBe("999.07");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refund_processing");
    await expectHealthyLedger(server);
  });
});

if (storeKind() === "postgres") {
  describe("PostgreSQL: two service instances on one database", () => {
    let second: TestServer;
    beforeAll(async () => {
      second = await startTestServer({ database: server.database });
    });
    afterAll(async () => {
      await second?.close();
    });

    it("accepts exactly one of parallel refunds of one invoice sent to both instances", async () => {
      const m = await feeFreeMerchant(server);
      const invoice = await autoconvertedInvoice(m, "0xtwo-instances");
      await adjust(server, m.id, "EUR", "1000");
      const calls = await Promise.all(
        Array.from({ length: 16 }, (_, i) => {
          const target = i % 2 === 0 ? server : second;
          return i % 4 < 2
            ? refundFiat(target, m, { invoiceId: invoice.id })
            : refundCrypto(target, m, { invoiceId: invoice.id, withdrawToSameAddress: true });
        }),
      );
      expect(calls.filter((c) => c.answer.status === 200)).toHaveLength(1);
      for (const c of calls.filter((c) => c.answer.status !== 200)) expectProblem(c.answer, 400, "refund_exists");
      expect((await balances(server, m.id)).EUR).toBe("999.07");
      await expectHealthyLedger(server);
    });
  });
}
