// The card provider's fees (product §20): each card payment's balance transaction fee booked once as the operator's cost, in the currency Stripe charged it in, and shown in the operator's report.
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseAmount } from "../../src/domain/money.ts";
import { createInvoice, expectHealthyLedger } from "../support/invoices.ts";
import { refundFiat } from "../support/refunds.ts";
import { admin, call, createMerchant, expectProblem, startTestServer, type TestServer } from "../support/server.ts";
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
afterEach(() => {
  double.settlement = null;
  double.holdBalanceTransactions = false;
  double.refundFeeReturned = 0;
  double.failNext.retrievals = 0;
  double.failNext.status = 500;
});

function webhook(event: { body: string; signature: string }) {
  return call(server.baseUrl, "POST", "/webhooks/stripe", {
    headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": event.signature },
    rawBody: event.body,
  });
}

/** An invoice in `currency` with its checkout session at the double (the payer clicked "Pay by card"). */
async function invoiceWithSession(currency: string, amount: string): Promise<DoubleSession> {
  const invoice = await createInvoice(server, m.apiKey, { currency, amount });
  const clicked = await fetch(`${server.baseUrl}/pay/${invoice.id}/card`, { method: "POST", redirect: "manual" });
  expect(clicked.status).toBe(303);
  const session = double.sessions.find((s) => s.invoiceId === invoice.id);
  if (!session) throw new Error("no session at the double");
  return session;
}

async function feeMovements(causeId: string) {
  return server.ctx.store.db
    .selectFrom("ledger_movements")
    .innerJoin("ledger_entries", "ledger_entries.movement_id", "ledger_movements.id")
    .select(["ledger_movements.kind", "ledger_entries.account", "ledger_entries.currency", "ledger_entries.amount"])
    .where("ledger_movements.cause", "=", "card_fee")
    .where("ledger_movements.cause_id", "=", causeId)
    .orderBy("ledger_entries.account")
    .execute();
}

/** The operator's report, as minor units (2 decimals: EUR and USD) per currency. */
async function reportedFees(): Promise<Map<string, { fees: bigint; payments: number; refunds: number }>> {
  const answer = await admin(server, "GET", "/reports/card-fees");
  expect(answer.status).toBe(200);
  const rows = answer.body as { currency: string; fees: string; payments: number; refunds: number }[];
  return new Map(
    rows.map((r) => {
      const fees = parseAmount(r.fees.replace(/^-/, ""), 2);
      if (!fees.ok) throw new Error(`report fee ${r.fees}`);
      return [
        r.currency,
        { payments: r.payments, refunds: r.refunds, fees: r.fees.startsWith("-") ? -fees.value : fees.value },
      ];
    }),
  );
}

function feeOf(session: DoubleSession): bigint {
  const bt = double.payments.get(session.paymentIntent)?.balanceTransaction;
  if (!bt) throw new Error("the charge has no balance transaction");
  return BigInt(bt.fee);
}

function retrievals(): number {
  return double.requests.filter((r) => r.method === "GET").length;
}

describe("card provider fees", () => {
  it("books one fee movement per payment, whatever the retries and parallel deliveries, and the report sums them", async () => {
    const before = await reportedFees();
    const first = await invoiceWithSession("EUR", "100");
    const second = await invoiceWithSession("EUR", "12.34");
    const completed = double.event("checkout.session.completed", double.paidSession(first));
    const intent = double.event("payment_intent.succeeded", {
      id: first.paymentIntent,
      object: "payment_intent",
      amount: 10000,
      amount_received: 10000,
      currency: "eur",
      status: "succeeded",
      metadata: { invoice_id: first.invoiceId },
    });
    // The same event four times at once, and the payment's own event beside it.
    const answers = await Promise.all([completed, completed, completed, completed].map(webhook));
    for (const answer of answers) expect(answer.status).toBe(200);
    expect(answers.map((a) => a.body.outcome).sort()).toEqual(["applied", "duplicate", "duplicate", "duplicate"]);
    expect((await webhook(intent)).status).toBe(200);
    const fee = feeOf(first);
    expect(fee).toBeGreaterThan(0n);
    const bt = double.payments.get(first.paymentIntent)?.balanceTransaction;
    expect(bt).toMatchObject({ object: "balance_transaction", type: "charge", currency: "eur", amount: 10000 });
    expect(bt?.net).toBe(10000 - Number(fee));
    expect(await feeMovements(first.paymentIntent)).toEqual([
      { kind: "payment", account: "external:card_provider", currency: "EUR", amount: fee.toString() },
      { kind: "payment", account: "operator:card_fees", currency: "EUR", amount: (-fee).toString() },
    ]);
    // A redelivery finds the fee booked: nothing more, and Stripe is not asked again.
    const asked = retrievals();
    expect((await webhook(completed)).body.outcome).toBe("duplicate");
    expect((await webhook(intent)).body.outcome).toBe("duplicate");
    expect(retrievals()).toBe(asked);
    expect(await feeMovements(first.paymentIntent)).toHaveLength(2);

    expect((await webhook(double.event("checkout.session.completed", double.paidSession(second)))).status).toBe(200);
    const after = await reportedFees();
    const was = before.get("EUR") ?? { fees: 0n, payments: 0, refunds: 0 };
    expect(after.get("EUR")).toMatchObject({
      fees: was.fees + fee + feeOf(second),
      payments: was.payments + 2,
      refunds: was.refunds,
    });
    await expectHealthyLedger(server);
  });

  it("books the fee in the currency Stripe charged it in: the account's settlement currency", async () => {
    double.settlement = { currency: "usd", rate: 1.1 };
    const before = (await reportedFees()).get("USD")?.fees ?? 0n;
    const session = await invoiceWithSession("EUR", "50");
    expect((await webhook(double.event("checkout.session.completed", double.paidSession(session)))).status).toBe(200);
    const bt = double.payments.get(session.paymentIntent)?.balanceTransaction;
    expect(bt).toMatchObject({ currency: "usd", amount: 5500, exchange_rate: 1.1 });
    const fee = feeOf(session);
    expect(await feeMovements(session.paymentIntent)).toEqual([
      expect.objectContaining({ account: "external:card_provider", currency: "USD", amount: fee.toString() }),
      expect.objectContaining({ account: "operator:card_fees", currency: "USD", amount: (-fee).toString() }),
    ]);
    expect((await reportedFees()).get("USD")?.fees).toBe(before + fee);
    await expectHealthyLedger(server);
  });

  it("asks for a redelivery while Stripe has not booked the charge, keeps the payment, and books the fee once it has", async () => {
    double.holdBalanceTransactions = true;
    const session = await invoiceWithSession("EUR", "20");
    const completed = double.event("checkout.session.completed", double.paidSession(session));
    expectProblem(await webhook(completed), 503, "card_provider_unavailable");
    // The payment itself counted: the invoice is paid, only the fee waits.
    const invoice = await admin(server, "GET", `/invoices/${session.invoiceId}`);
    expect(invoice.body.invoice.status).toBe("completed");
    expect(await feeMovements(session.paymentIntent)).toEqual([]);
    expectProblem(await webhook(completed), 503, "card_provider_unavailable");
    await expectHealthyLedger(server);

    double.bookCharge(session.paymentIntent);
    const redelivered = await webhook(completed);
    expect(redelivered.status).toBe(200);
    expect(redelivered.body.outcome).toBe("duplicate");
    expect(await feeMovements(session.paymentIntent)).toEqual([
      expect.objectContaining({ account: "external:card_provider", amount: feeOf(session).toString() }),
      expect.objectContaining({ account: "operator:card_fees", amount: (-feeOf(session)).toString() }),
    ]);
    await expectHealthyLedger(server);
  });

  it("asks for a redelivery when Stripe does not answer, and books nothing (logged) when it refuses to show the fee", async () => {
    const silent = await invoiceWithSession("EUR", "15");
    const completed = double.event("checkout.session.completed", double.paidSession(silent));
    // The SDK's own retries (two) meet the same failure.
    double.failNext.retrievals = 3;
    expectProblem(await webhook(completed), 503, "card_provider_unavailable");
    expect(double.failNext.retrievals).toBe(0);
    expect(await feeMovements(silent.paymentIntent)).toEqual([]);
    expect((await webhook(completed)).body.outcome).toBe("duplicate");
    expect(await feeMovements(silent.paymentIntent)).toHaveLength(2);

    // A key that may not read the payment: the same on every delivery, so the event is not failed for it.
    const refused = await invoiceWithSession("EUR", "16");
    double.failNext.retrievals = 1;
    double.failNext.status = 403;
    const paid = await webhook(double.event("checkout.session.completed", double.paidSession(refused)));
    expect(paid.status).toBe(200);
    expect(paid.body.outcome).toBe("applied");
    expect(await feeMovements(refused.paymentIntent)).toEqual([]);
    await expectHealthyLedger(server);
  });

  it("books what a refund's balance transaction says: nothing when Stripe keeps the fee, a credit when it gives some back", async () => {
    const refunder = await createMerchant(server, { feePercent: "0" });
    async function refunded(returned: number): Promise<string> {
      double.refundFeeReturned = returned;
      const invoice = await createInvoice(server, refunder.apiKey, { currency: "EUR", amount: "30" });
      await fetch(`${server.baseUrl}/pay/${invoice.id}/card`, { method: "POST", redirect: "manual" });
      const session = double.sessions.find((s) => s.invoiceId === invoice.id) as DoubleSession;
      expect((await webhook(double.event("checkout.session.completed", double.paidSession(session)))).status).toBe(200);
      const requestId = randomUUID().toLowerCase();
      expect((await refundFiat(server, refunder, { invoiceId: invoice.id }, { requestId })).answer.status).toBe(200);
      await server.workers.loops.payouts?.runOnce();
      const refund = double.refunds.find((r) => r.paymentIntent === session.paymentIntent);
      if (!refund) throw new Error("no refund at the double");
      const succeeded = double.event("refund.updated", {
        id: refund.id,
        object: "refund",
        amount: 3000,
        status: "succeeded",
        payment_intent: session.paymentIntent,
        balance_transaction: refund.balanceTransaction,
        metadata: { refund_request_id: requestId },
      });
      expect((await webhook(succeeded)).body.outcome).toBe("applied");
      expect((await webhook(succeeded)).body.outcome).toBe("duplicate");
      return refund.id;
    }
    const before = (await reportedFees()).get("EUR");
    const kept = await refunded(0);
    expect(double.balanceTransactions.get(double.refunds.at(-1)?.balanceTransaction ?? "")?.fee).toBe(0);
    expect(await feeMovements(kept)).toEqual([]);
    const givenBack = await refunded(40);
    expect(await feeMovements(givenBack)).toEqual([
      { kind: "refund", account: "external:card_provider", currency: "EUR", amount: "-40" },
      { kind: "refund", account: "operator:card_fees", currency: "EUR", amount: "40" },
    ]);
    const after = (await reportedFees()).get("EUR");
    const paymentFees = double.refunds
      .slice(-2)
      .reduce((sum, r) => sum + BigInt(double.payments.get(r.paymentIntent)?.balanceTransaction?.fee ?? 0), 0n);
    expect(after?.fees).toBe((before?.fees ?? 0n) + paymentFees - 40n);
    expect(after?.refunds).toBe((before?.refunds ?? 0) + 1);
    await expectHealthyLedger(server);
  });

  it("keeps the report to the operator", async () => {
    const answer = await call(server.baseUrl, "GET", "/admin/v1/reports/card-fees");
    expect(answer.status).toBe(401);
  });
});
