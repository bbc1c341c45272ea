// Refund payouts through the payout worker: hand-over, completion (invoice refunded) and refusal (debit back, invoice completed again).
import { describe, expect, it } from "vitest";
import { findPayout } from "../../src/store/payouts.ts";
import { type PayoutProcessor, runPayoutBatch, sandboxPayoutProcessor } from "../../src/workers/payouts.ts";
import { useTestServer } from "../support/fixture.ts";
import { balances, expectHealthyLedger } from "../support/invoices.ts";
import {
  adjust,
  callbackTypes,
  completedInvoice,
  feeFreeMerchant,
  invoiceStatus,
  payoutOutcome,
  type RefundMerchant,
  refundCrypto,
  refundFiat,
} from "../support/refunds.ts";
import { payoutWorker } from "../support/withdrawals.ts";

const server = useTestServer();

function batch(processor: PayoutProcessor, now = new Date()) {
  return runPayoutBatch(server.ctx.store, {
    processor,
    now,
    leaseMs: 60_000,
    batchSize: 50,
    publicBaseUrl: server.config.publicBaseUrl,
    log: server.app.log,
  });
}

async function refundStatus(requestId: string): Promise<string | undefined> {
  const row = await server.ctx.store.db
    .selectFrom("refunds")
    .select("status")
    .where("request_id", "=", requestId.toLowerCase())
    .executeTakeFirst();
  return row?.status;
}

async function acceptedFiatRefund(m: RefundMerchant) {
  const invoice = await completedInvoice(server, m, {
    currency: "EUR",
    amount: "40",
    callbackUrl: "http://127.0.0.1:9/callbacks",
  });
  const { answer, requestId } = await refundFiat(server, m, { invoiceId: invoice.id });
  expect(answer.status).toBe(200);
  expect((await balances(server, m.id)).EUR).toBe("0");
  return { invoice, requestId, answer };
}

describe("the payout worker and refunds", () => {
  it("hands a refund's payout to the processor; its report then shows on the refund", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "30" }, [{ fromAddress: "0xw" }]);
    await adjust(server, m.id, "USDT", "1");
    const { requestId } = await refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true });
    expect(await payoutWorker(server).runOnce()).toBeGreaterThan(0);
    const payout = await findPayout(server.ctx.store, requestId.toLowerCase());
    expect(payout).toMatchObject({ operation: "refund", state: "sent", destination: "0xw", currency: "USDT" });
    expect(payout?.amountMinor).toBe(30_000_000n);
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refund_processing");
    const settled = await payoutOutcome(server, m, requestId, { status: "completed" });
    expect(settled.status).toBe(200);
    expect(settled.body.request).toMatchObject({
      id: requestId,
      status: "completed",
      payout_processor_status: "confirmed",
      payout_processor_tx_id: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refunded");
  });

  it("settles a refund completed when the processor reports it done: the invoice is refunded", async () => {
    const m = await feeFreeMerchant(server);
    const { invoice, requestId } = await acceptedFiatRefund(m);
    // The sandbox processor with a 1 ms delay, asked a second later: handed over and settled in one batch.
    await batch(sandboxPayoutProcessor(1), new Date(Date.now() + 1000));
    expect((await findPayout(server.ctx.store, requestId.toLowerCase()))?.state).toBe("completed");
    expect(await refundStatus(requestId)).toBe("completed");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refunded");
    expect(await callbackTypes(server, invoice.id)).toEqual([
      "invoice.completed",
      "invoice.refund_processing",
      "invoice.refunded",
    ]);
    expect((await balances(server, m.id)).EUR).toBe("0");
    await expectHealthyLedger(server);
  });

  it("fails a refund the processor refuses: the debit comes back and the invoice is completed again", async () => {
    const m = await feeFreeMerchant(server);
    const { invoice, requestId, answer } = await acceptedFiatRefund(m);
    const refusing: PayoutProcessor = {
      name: "refusing",
      send: async () => ({ kind: "refused", processorStatus: "card_closed", reason: "the card was closed" }),
      check: async () => ({ kind: "pending", processorStatus: "pending", checkAt: null }),
    };
    await batch(refusing);
    expect((await findPayout(server.ctx.store, requestId.toLowerCase()))?.state).toBe("failed");
    expect(await refundStatus(requestId)).toBe("failed");
    expect((await balances(server, m.id)).EUR).toBe("40");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("completed");
    expect(await callbackTypes(server, invoice.id)).toEqual([
      "invoice.completed",
      "invoice.refund_processing",
      "invoice.completed",
    ]);
    // A retry of the request id still answers the original acceptance; a new id refunds again.
    const retry = await refundFiat(server, m, { invoiceId: invoice.id }, { requestId });
    expect(retry.answer.text).toBe(answer.text);
    expect((await refundFiat(server, m, { invoiceId: invoice.id })).answer.status).toBe(200);
    expect((await balances(server, m.id)).EUR).toBe("0");
    await expectHealthyLedger(server);
  });
});
