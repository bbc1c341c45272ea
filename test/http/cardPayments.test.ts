// Fiat in live mode through a card provider (product §20): one checkout per invoice, webhooks applied once, bad webhooks refused, disputes held, RefundFiat at the provider.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { invitedUser } from "../support/dashboard.ts";
import { storeDigest } from "../support/digest.ts";
import { balances, createInvoice, expectHealthyLedger } from "../support/invoices.ts";
import { adjust, refundFiat } from "../support/refunds.ts";
import {
  admin,
  call,
  createMerchant,
  expectProblem,
  merchant,
  startTestServer,
  type TestServer,
} from "../support/server.ts";
import { type DoubleSession, type StripeDouble, startStripeDouble, stripeEnv } from "../support/stripeDouble.ts";

let double: StripeDouble;
let server: TestServer;
let m: { id: string; apiKey: string; secretKey: string };

beforeAll(async () => {
  double = await startStripeDouble();
  server = await startTestServer({ env: stripeEnv(double) });
  m = await createMerchant(server, { feePercent: "1" });
});
afterAll(async () => {
  await server?.close();
  await double?.close();
});

/** Clicks "Pay by card": the answer's redirect, not followed. */
async function clickPayByCard(invoiceId: string): Promise<Response> {
  return fetch(`${server.baseUrl}/pay/${invoiceId}/card`, { method: "POST", redirect: "manual" });
}

function webhook(event: { body: string; signature: string | null }) {
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
  if (event.signature !== null) headers["stripe-signature"] = event.signature;
  return call(server.baseUrl, "POST", "/webhooks/stripe", { headers, rawBody: event.body });
}

async function getInvoice(id: string) {
  const answer = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${id}`);
  expect(answer.status).toBe(200);
  return answer.body;
}

/** An EUR invoice with its checkout session at the provider. */
async function invoiceWithSession(amount = "100"): Promise<{ invoice: Record<string, any>; session: DoubleSession }> {
  const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount });
  const clicked = await clickPayByCard(invoice.id);
  expect(clicked.status).toBe(303);
  const session = double.sessions.find((s) => s.invoiceId === invoice.id);
  if (!session) throw new Error("no session at the double");
  expect(clicked.headers.get("location")).toBe(session.url);
  return { invoice, session };
}

async function paid(session: DoubleSession) {
  const answer = await webhook(double.event("checkout.session.completed", double.paidSession(session)));
  expect(answer.status).toBe(200);
  return answer;
}

function dispute(session: DoubleSession, id: string, status: string, amount: number) {
  return {
    id,
    object: "dispute",
    amount,
    currency: "eur",
    charge: `ch_${session.paymentIntent.slice(3)}`,
    payment_intent: session.paymentIntent,
    reason: "fraudulent",
    status,
  };
}

describe("the live gate with a card provider", () => {
  it("takes fiat invoices and estimates, and still refuses crypto without a network", async () => {
    const created = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "EUR",
      amount: 10,
    });
    expect(created.status).toBe(200);
    expect(created.body.api_source).toBeNull();
    const estimate = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/estimateFees", {
      currency: "USD",
      amount: 10,
    });
    expect(estimate.status).toBe(200);
    expectProblem(
      await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", { currency: "USDT", amount: 10 }),
      400,
      "currency_unavailable",
    );
  });
});

describe("Pay by card", () => {
  it("creates one checkout session per invoice, keyed by the invoice id, for final_amount, returning to the payer's page", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount: "12.34" });
    const requestsBefore = double.requests.length;
    const clicks = await Promise.all([1, 2, 3, 4].map(() => clickPayByCard(invoice.id)));
    const again = await clickPayByCard(invoice.id);
    const sessions = double.sessions.filter((s) => s.invoiceId === invoice.id);
    expect(sessions).toHaveLength(1);
    const [session] = sessions as [DoubleSession];
    for (const clicked of [...clicks, again]) {
      expect(clicked.status).toBe(303);
      expect(clicked.headers.get("location")).toBe(session.url);
    }
    // Every call to the provider for this invoice carried the invoice id as its idempotency key.
    const calls = double.requests.slice(requestsBefore).filter((r) => r.path === "/v1/checkout/sessions");
    expect(calls.length).toBeGreaterThanOrEqual(1);
    for (const r of calls) expect(r.idempotencyKey).toBe(invoice.id);
    expect(session.amount).toBe(1234);
    expect(session.currency).toBe("eur");
    expect(session.successUrl).toBe(`${server.config.publicBaseUrl}/pay/${invoice.id}`);
    expect(session.cancelUrl).toBe(`${server.config.publicBaseUrl}/pay/${invoice.id}`);
    // The browser's return pays nothing.
    expect((await getInvoice(invoice.id)).status).toBe("pending");
  });

  it("shows the button on a fiat invoice's page, lets its form lead to the provider, and refuses a crypto or unknown invoice", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount: "5" });
    const page = await call(server.baseUrl, "GET", `/pay/${invoice.id}`);
    expect(page.text).toContain(`action="/pay/${invoice.id}/card"`);
    expect(page.headers.get("content-security-policy")).toContain(`form-action 'self' ${double.baseUrl}`);
    expectProblem(await call(server.baseUrl, "POST", `/pay/nope/card`), 404, "invoice_not_found");
  });

  it("pays the invoice from the webhook once, whichever events report the payment and in whatever order", async () => {
    const before = await balances(server, m.id);
    const { invoice, session } = await invoiceWithSession("100");
    // The payment's success first: a PaymentIntent names no session, so it counts only once the
    // session's completion has reported it. Then the session's completion, then both again.
    const intent = {
      id: session.paymentIntent,
      object: "payment_intent",
      amount: 10000,
      amount_received: 10000,
      currency: "eur",
      status: "succeeded",
      metadata: { invoice_id: invoice.id },
    };
    const first = double.event("payment_intent.succeeded", intent);
    expect((await webhook(first)).body.outcome).toBe("ignored");
    expect((await getInvoice(invoice.id)).status).toBe("pending");
    const completed = double.event("checkout.session.completed", double.paidSession(session));
    expect((await webhook(completed)).body.outcome).toBe("applied");
    expect((await webhook(first)).body.outcome).toBe("applied");
    expect((await webhook(first)).body.outcome).toBe("duplicate");
    expect((await webhook(completed)).body.outcome).toBe("duplicate");
    const read = await getInvoice(invoice.id);
    expect(read.status).toBe("completed");
    expect(read.api_source).toBe("stripe");
    expect(read.paid_amount).toBe("100");
    const after = await balances(server, m.id);
    expect(BigInt(Math.round(Number(after.EUR) * 100)) - BigInt(Math.round(Number(before.EUR ?? "0") * 100))).toBe(
      BigInt(Math.round(Number(read.merchant_receive_amount) * 100)),
    );
    // A second click after payment is refused: the invoice takes no more payments.
    const afterwards = await clickPayByCard(invoice.id);
    expect(afterwards.status).toBe(409);
    await expectHealthyLedger(server);
  });
});

describe("bad webhooks", () => {
  it("refuses a wrong secret, a tampered body and a missing signature with 400, changing nothing", async () => {
    const { invoice, session } = await invoiceWithSession("7");
    const before = await storeDigest(server.ctx.store);
    const good = double.event("checkout.session.completed", double.paidSession(session));
    const wrongSecret = double.event("checkout.session.completed", double.paidSession(session), {
      secret: "whsec_someoneelse0123456789",
    });
    const tampered = { body: good.body.replace('"amount_total":700', '"amount_total":1'), signature: good.signature };
    expect(tampered.body).not.toBe(good.body);
    for (const bad of [
      wrongSecret,
      tampered,
      { body: good.body, signature: null },
      { body: good.body, signature: "t=1,v1=00" },
    ]) {
      expectProblem(await webhook(bad), 400, "invalid_webhook_signature");
    }
    expect(await storeDigest(server.ctx.store)).toBe(before);
    expect((await getInvoice(invoice.id)).status).toBe("pending");
  });

  it("answers unknown event types 200 and ignores them; a session of nobody's changes nothing", async () => {
    const before = await storeDigest(server.ctx.store);
    const ignored = await webhook(double.event("customer.created", { id: "cus_1", object: "customer" }));
    expect(ignored.status).toBe(200);
    expect(ignored.body.outcome).toBe("ignored");
    const stranger: DoubleSession = {
      id: "cs_test_unknown",
      url: "",
      paymentIntent: "pi_unknown",
      currency: "eur",
      amount: 100,
      invoiceId: randomUUID(),
      successUrl: "",
      cancelUrl: "",
    };
    const unknown = await webhook(double.event("checkout.session.completed", double.paidSession(stranger)));
    expect(unknown.status).toBe(200);
    expect(unknown.body.outcome).toBe("unknown");
    expect(await storeDigest(server.ctx.store)).toBe(before);
  });
});

/** The ledger's balance of one account in one currency, in minor units. */
async function accountBalance(account: string, currency: string): Promise<bigint> {
  const rows = await server.ctx.store.db
    .selectFrom("ledger_entries")
    .select("amount")
    .where("account", "=", account)
    .where("currency", "=", currency)
    .execute();
  return rows.reduce((sum, r) => sum + BigInt(r.amount), 0n);
}

describe("disputes", () => {
  it("holds what the balance covers, makes the rest an operator receivable, and pays the hold out when lost", async () => {
    const merchantB = await createMerchant(server, { feePercent: "0" });
    const invoice = await createInvoice(server, merchantB.apiKey, { currency: "EUR", amount: "50" });
    expect((await clickPayByCard(invoice.id)).status).toBe(303);
    const session = double.sessions.find((s) => s.invoiceId === invoice.id) as DoubleSession;
    await paid(session);
    expect((await balances(server, merchantB.id)).EUR).toBe("50");
    // The merchant spent 30 of it: a 50 dispute finds 20 to hold, and 30 become a receivable.
    await adjust(server, merchantB.id, "EUR", "-30");
    const opened = double.event("charge.dispute.created", dispute(session, "dp_lost", "needs_response", 5000));
    expect((await webhook(opened)).body.outcome).toBe("applied");
    expect((await webhook(opened)).body.outcome).toBe("duplicate");
    expect((await balances(server, merchantB.id)).EUR).toBe("0");
    expect(await accountBalance(`held:disputes:${merchantB.id}`, "EUR")).toBe(5000n);
    expect(await accountBalance(`operator:receivables:${merchantB.id}`, "EUR")).toBe(-3000n);
    await expectHealthyLedger(server);

    const shown = await merchant(server, merchantB.apiKey, "GET", `/public/v1/invoices/${invoice.id}/disputes`);
    expect(shown.status).toBe(200);
    expect(shown.body).toEqual([
      expect.objectContaining({
        id: "dp_lost",
        status: "needs_response",
        amount: "50",
        currency: "EUR",
        outcome: null,
      }),
    ]);
    // GetInvoice keeps the interface's answer: no dispute field there.
    expect(
      Object.keys((await merchant(server, merchantB.apiKey, "GET", `/public/v1/invoices/${invoice.id}`)).body),
    ).not.toContain("disputes");
    const viewer = await invitedUser(server, merchantB.id, "viewer");
    const detail = await viewer.call("GET", `/invoices/${invoice.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.disputes).toEqual([
      expect.objectContaining({ id: "dp_lost", held_amount: "50", receivable_amount: "30", outcome: null }),
    ]);
    const operator = await admin(server, "GET", "/disputes");
    expect(operator.status).toBe(200);
    expect(operator.body.some((d: { id: string }) => d.id === "dp_lost")).toBe(true);

    await webhook(double.event("charge.dispute.updated", dispute(session, "dp_lost", "under_review", 5000)));
    const closed = double.event("charge.dispute.closed", dispute(session, "dp_lost", "lost", 5000));
    expect((await webhook(closed)).body.outcome).toBe("applied");
    // A late "updated" after closing changes nothing.
    await webhook(double.event("charge.dispute.updated", dispute(session, "dp_lost", "under_review", 5000)));
    expect(await accountBalance(`held:disputes:${merchantB.id}`, "EUR")).toBe(0n);
    expect(await accountBalance(`operator:receivables:${merchantB.id}`, "EUR")).toBe(-3000n);
    expect((await balances(server, merchantB.id)).EUR).toBe("0");
    const after = await merchant(server, merchantB.apiKey, "GET", `/public/v1/invoices/${invoice.id}/disputes`);
    expect(after.body[0]).toMatchObject({ status: "lost", outcome: "lost" });
    await expectHealthyLedger(server);
  });

  it("gives the hold back when the dispute is won, even when closed arrives before created", async () => {
    const merchantC = await createMerchant(server, { feePercent: "0" });
    const invoice = await createInvoice(server, merchantC.apiKey, { currency: "EUR", amount: "40" });
    expect((await clickPayByCard(invoice.id)).status).toBe(303);
    const session = double.sessions.find((s) => s.invoiceId === invoice.id) as DoubleSession;
    await paid(session);
    const created = double.event("charge.dispute.created", dispute(session, "dp_won", "needs_response", 1500));
    const closed = double.event("charge.dispute.closed", dispute(session, "dp_won", "won", 1500));
    await webhook(created);
    expect((await balances(server, merchantC.id)).EUR).toBe("25");
    await webhook(closed);
    await webhook(created);
    expect((await balances(server, merchantC.id)).EUR).toBe("40");
    expect(await accountBalance(`held:disputes:${merchantC.id}`, "EUR")).toBe(0n);
    await expectHealthyLedger(server);

    // Reordered: the closing event first opens and settles the dispute at once; created after it changes nothing.
    const reordered = double.event("charge.dispute.closed", dispute(session, "dp_won_2", "won", 1000));
    await webhook(reordered);
    await webhook(double.event("charge.dispute.created", dispute(session, "dp_won_2", "needs_response", 1000)));
    expect((await balances(server, merchantC.id)).EUR).toBe("40");
    await expectHealthyLedger(server);
  });
});

describe("RefundFiat of a card payment", () => {
  async function paidInvoice(amount: string) {
    const merchantR = await createMerchant(server, { feePercent: "0" });
    const invoice = await createInvoice(server, merchantR.apiKey, { currency: "EUR", amount });
    expect((await clickPayByCard(invoice.id)).status).toBe(303);
    const session = double.sessions.find((s) => s.invoiceId === invoice.id) as DoubleSession;
    await paid(session);
    return { merchantR, invoice, session };
  }

  it("refunds at the provider once, keyed by the request id, and completes from the webhook", async () => {
    const { merchantR, invoice, session } = await paidInvoice("20");
    const requestId = randomUUID();
    const first = await refundFiat(server, merchantR, { invoiceId: invoice.id }, { requestId });
    expect(first.answer.status).toBe(200);
    await server.workers.loops.payouts?.runOnce();
    const retried = await refundFiat(server, merchantR, { invoiceId: invoice.id }, { requestId });
    expect(retried.answer.status).toBe(200);
    await server.workers.loops.payouts?.runOnce();
    const refunds = double.refunds.filter((r) => r.paymentIntent === session.paymentIntent);
    expect(refunds).toHaveLength(1);
    const [refund] = refunds as [(typeof refunds)[number]];
    expect(refund.amount).toBe(2000);
    expect(
      double.requests.filter((r) => r.path === "/v1/refunds" && r.idempotencyKey === requestId.toLowerCase()),
    ).not.toHaveLength(0);
    const processing = await merchant(server, merchantR.apiKey, "GET", `/public/v1/refunds/${requestId}`);
    expect(processing.body.request).toMatchObject({
      status: "processing",
      payout_processor_status: "pending",
      payout_processor_tx_id: refund.id,
    });
    expect((await balances(server, merchantR.id)).EUR).toBe("0");

    const succeeded = double.event("refund.updated", {
      id: refund.id,
      object: "refund",
      amount: 2000,
      status: "succeeded",
      payment_intent: session.paymentIntent,
      metadata: { refund_request_id: requestId.toLowerCase() },
    });
    expect((await webhook(succeeded)).body.outcome).toBe("applied");
    expect((await webhook(succeeded)).body.outcome).toBe("duplicate");
    const done = await merchant(server, merchantR.apiKey, "GET", `/public/v1/refunds/${requestId}`);
    expect(done.body.request).toMatchObject({
      status: "completed",
      payout_processor_status: "succeeded",
      payout_processor_tx_id: refund.id,
    });
    expect((await getInvoiceOf(merchantR.apiKey, invoice.id)).status).toBe("refunded");
    await expectHealthyLedger(server);
  });

  it("fails from the webhook with the money back to the merchant and the invoice completed again", async () => {
    const { merchantR, invoice, session } = await paidInvoice("30");
    const requestId = randomUUID();
    expect((await refundFiat(server, merchantR, { invoiceId: invoice.id }, { requestId })).answer.status).toBe(200);
    await server.workers.loops.payouts?.runOnce();
    const refund = double.refunds.find((r) => r.paymentIntent === session.paymentIntent);
    if (!refund) throw new Error("no refund at the double");
    // Without metadata the refund is found by its id.
    await webhook(
      double.event("charge.refund.updated", {
        id: refund.id,
        object: "refund",
        amount: 3000,
        status: "failed",
        metadata: {},
      }),
    );
    const failed = await merchant(server, merchantR.apiKey, "GET", `/public/v1/refunds/${requestId}`);
    expect(failed.body.request).toMatchObject({
      status: "failed",
      payout_processor_status: "failed",
      payout_processor_tx_id: refund.id,
    });
    expect((await balances(server, merchantR.id)).EUR).toBe("30");
    expect((await getInvoiceOf(merchantR.apiKey, invoice.id)).status).toBe("completed");
    await expectHealthyLedger(server);
  });
});

async function getInvoiceOf(apiKey: string, id: string) {
  const answer = await merchant(server, apiKey, "GET", `/public/v1/invoices/${id}`);
  expect(answer.status).toBe(200);
  return answer.body;
}

async function scrape(): Promise<string> {
  const answer = await call(server.baseUrl, "GET", "/metrics", {
    headers: { authorization: `Bearer ${server.adminToken}` },
  });
  expect(answer.status).toBe(200);
  return answer.text;
}

/** GET /metrics: the ignored card provider events by reason. */
async function ignoredEvents(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const match of (await scrape()).matchAll(
    /^payments_card_provider_events_ignored_total\{reason="([a-z_]+)"\} (\d+)$/gm,
  )) {
    counts[match[1] as string] = Number(match[2]);
  }
  return counts;
}

function abovePayment(metrics: string): number {
  return Number(/^payments_card_disputes_above_payment_total (\d+)$/m.exec(metrics)?.[1]);
}

describe("webhooks change only what the service started", () => {
  it("records nothing for a signed payment_intent.succeeded that is not the PaymentIntent of the invoice's session", async () => {
    const victim = await createMerchant(server, { feePercent: "0" });
    const invoice = await createInvoice(server, victim.apiKey, { currency: "EUR", amount: "80" });
    expect((await clickPayByCard(invoice.id)).status).toBe(303);
    const session = double.sessions.find((s) => s.invoiceId === invoice.id) as DoubleSession;
    const ignoredBefore = (await ignoredEvents()).payment_not_of_checkout ?? 0;
    const before = await storeDigest(server.ctx.store);
    // Another integration of the same Stripe account (or anyone with its keys) names our invoice in its own PaymentIntent.
    const forged = double.event("payment_intent.succeeded", {
      id: "pi_someone_elses",
      object: "payment_intent",
      amount: 1,
      amount_received: 1,
      currency: "eur",
      status: "succeeded",
      metadata: { invoice_id: invoice.id },
    });
    const answer = await webhook(forged);
    expect(answer.status).toBe(200);
    expect(answer.body.outcome).toBe("ignored");
    expect(await storeDigest(server.ctx.store)).toBe(before);
    expect((await getInvoiceOf(victim.apiKey, invoice.id)).status).toBe("pending");
    expect((await ignoredEvents()).payment_not_of_checkout).toBe(ignoredBefore + 1);
    // The invoice's own session still pays it, and the stranger's payment still counts for nothing.
    await paid(session);
    expect((await webhook(forged)).body.outcome).toBe("ignored");
    const read = await getInvoiceOf(victim.apiKey, invoice.id);
    expect(read).toMatchObject({ status: "completed", paid_amount: "80" });
    await expectHealthyLedger(server);
  });

  it("applies a refund event only to a refund made through the card provider", async () => {
    const merchantX = await createMerchant(server, { feePercent: "0" });
    /** A refund's payout made to look as a crypto refund's does on the EVM rail: signed (no hash yet), or broadcast with its hash. */
    async function cryptoRefund(processorTxId: string | null): Promise<string> {
      const invoice = await createInvoice(server, merchantX.apiKey, { currency: "EUR", amount: "25" });
      expect((await clickPayByCard(invoice.id)).status).toBe(303);
      await paid(double.sessions.find((s) => s.invoiceId === invoice.id) as DoubleSession);
      const requestId = randomUUID().toLowerCase();
      expect((await refundFiat(server, merchantX, { invoiceId: invoice.id }, { requestId })).answer.status).toBe(200);
      await server.ctx.store.transaction((tx) =>
        tx.db
          .updateTable("payouts")
          .set({
            rail: "evm",
            processor: "evm",
            processor_status: processorTxId === null ? "signed" : "broadcast",
            processor_tx_id: processorTxId,
            state: processorTxId === null ? "sending" : "sent",
          })
          .where("request_id", "=", requestId)
          .execute(),
      );
      return requestId;
    }
    const signed = await cryptoRefund(null);
    const hash = `0x${"ab".repeat(32)}`;
    await cryptoRefund(hash);
    const ignoredBefore = (await ignoredEvents()).refund_not_by_card_provider ?? 0;
    const before = await storeDigest(server.ctx.store);
    const byMetadata = double.event("refund.updated", {
      id: "re_someone_elses",
      object: "refund",
      amount: 2500,
      status: "succeeded",
      metadata: { refund_request_id: signed },
    });
    const byId = double.event("charge.refund.updated", { id: hash, object: "refund", status: "failed", metadata: {} });
    const answers = [await webhook(byMetadata), await webhook(byId)];
    expect(await storeDigest(server.ctx.store)).toBe(before);
    for (const answer of answers) expect(answer.body).toEqual({ received: true, outcome: "ignored" });
    expect((await ignoredEvents()).refund_not_by_card_provider).toBe(ignoredBefore + 2);

    // A card refund not yet handed over: an event naming it, for a refund of another payment, is not it.
    const invoice = await createInvoice(server, merchantX.apiKey, { currency: "EUR", amount: "25" });
    expect((await clickPayByCard(invoice.id)).status).toBe(303);
    await paid(double.sessions.find((s) => s.invoiceId === invoice.id) as DoubleSession);
    const requestId = randomUUID().toLowerCase();
    expect((await refundFiat(server, merchantX, { invoiceId: invoice.id }, { requestId })).answer.status).toBe(200);
    const queued = await storeDigest(server.ctx.store);
    const otherPayment = double.event("refund.updated", {
      id: "re_of_another_payment",
      object: "refund",
      amount: 2500,
      status: "succeeded",
      payment_intent: "pi_another_payment",
      metadata: { refund_request_id: requestId },
    });
    expect((await webhook(otherPayment)).body.outcome).toBe("ignored");
    expect(await storeDigest(server.ctx.store)).toBe(queued);
    expect((await ignoredEvents()).refund_not_by_card_provider).toBe(ignoredBefore + 3);
  });

  it("caps a dispute above its payment at the payment and flags it for the operator", async () => {
    const merchantD = await createMerchant(server, { feePercent: "0" });
    const invoice = await createInvoice(server, merchantD.apiKey, { currency: "EUR", amount: "20" });
    expect((await clickPayByCard(invoice.id)).status).toBe(303);
    const session = double.sessions.find((s) => s.invoiceId === invoice.id) as DoubleSession;
    await paid(session);
    await adjust(server, merchantD.id, "EUR", "100");
    const flaggedBefore = abovePayment(await scrape());
    const opened = double.event("charge.dispute.created", dispute(session, "dp_above", "needs_response", 5000));
    expect((await webhook(opened)).body.outcome).toBe("applied");
    expect(abovePayment(await scrape())).toBe(flaggedBefore + 1);
    // 20 held out of 120, not 50: the dispute cannot take more than the payment brought.
    expect((await balances(server, merchantD.id)).EUR).toBe("100");
    expect(await accountBalance(`held:disputes:${merchantD.id}`, "EUR")).toBe(2000n);
    const shown = await merchant(server, merchantD.apiKey, "GET", `/public/v1/invoices/${invoice.id}/disputes`);
    expect(shown.body).toEqual([expect.objectContaining({ id: "dp_above", amount: "20", held_amount: "20" })]);
    const operator = await admin(server, "GET", `/disputes?merchantId=${merchantD.id}`);
    expect(operator.body).toEqual([expect.objectContaining({ id: "dp_above", amount: "20", provider_amount: "50" })]);
    await webhook(double.event("charge.dispute.closed", dispute(session, "dp_above", "lost", 5000)));
    expect(await accountBalance(`held:disputes:${merchantD.id}`, "EUR")).toBe(0n);
    expect((await balances(server, merchantD.id)).EUR).toBe("100");
    // A dispute within its payment carries no flag.
    await webhook(double.event("charge.dispute.created", dispute(session, "dp_within", "needs_response", 1000)));
    const within = await admin(server, "GET", `/disputes?merchantId=${merchantD.id}&open=true`);
    expect(within.body).toEqual([expect.objectContaining({ id: "dp_within", amount: "10", provider_amount: null })]);
    await expectHealthyLedger(server);
  });
});
