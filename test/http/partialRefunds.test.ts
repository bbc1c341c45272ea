// POST /public/v1/refunds/create (product §25): several refunds per invoice within what was paid, signed and idempotent, the invoice's statuses, and RefundCrypto refused once any refund exists.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { balances, expectHealthyLedger } from "../support/invoices.ts";
import {
  adjust,
  completedInvoice,
  feeFreeMerchant,
  invoiceStatus,
  movementEntries,
  payoutOutcome,
  REFUND_KEYS,
  type RefundMerchant,
  refundCrypto,
} from "../support/refunds.ts";
import { expectProblem, merchant } from "../support/server.ts";
import { type SignedCall, signedCall } from "../support/signing.ts";

const CREATE_REFUND_PATH = "/public/v1/refunds/create";

const server = useTestServer();

function createRefund(m: RefundMerchant, body: Record<string, unknown>, requestId?: string): Promise<SignedCall> {
  return signedCall(server.baseUrl, {
    apiKey: m.apiKey,
    secret: m.secretKey,
    path: CREATE_REFUND_PATH,
    body,
    ...(requestId ? { requestId } : {}),
  });
}

async function recorded(requestId: string): Promise<boolean> {
  const row = await server.ctx.store.db
    .selectFrom("signed_requests")
    .select("request_id")
    .where("request_id", "=", requestId.toLowerCase())
    .executeTakeFirst();
  return row !== undefined;
}

/** A fee-free merchant with a completed 100 USDT invoice paid from one sender, and 10 USDT more for fees. */
async function paidInvoice(): Promise<{ m: RefundMerchant; invoiceId: string }> {
  const m = await feeFreeMerchant(server);
  const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "100" }, [{ fromAddress: "0xpayer" }]);
  await adjust(server, m.id, "USDT", "10");
  return { m, invoiceId: invoice.id };
}

describe("POST /public/v1/refunds/create", () => {
  it("takes two partial refunds of one invoice, which stays completed, then RefundCrypto is refused", async () => {
    const { m, invoiceId } = await paidInvoice();
    const before = Number((await balances(server, m.id)).USDT);
    const first = await createRefund(m, { invoiceId, type: "crypto", amount: "30", address: "0xreturn-1" });
    expect(first.answer.status).toBe(200);
    expect(Object.keys(first.answer.body)).toEqual(["request", "claimUrl", "claimExpiresAt"]);
    expect(Object.keys(first.answer.body.request)).toEqual(REFUND_KEYS);
    expect(first.answer.body.request).toMatchObject({
      id: first.requestId,
      invoice_id: invoiceId,
      type: "crypto",
      currency: "USDT",
      amount: "30",
      to_address: "0xreturn-1",
      withdraw_to_same_address: false,
      status: "processing",
    });
    expect(first.answer.body.claimUrl).toBeNull();
    // The payer bears the 1 USDT network fee by default: 29 go out, 30 leave the balance.
    expect(await movementEntries(server, first.requestId, "debit")).toEqual(
      [
        `merchant:${m.id} USDT -29000000`,
        `merchant:${m.id} USDT -1000000`,
        "external:payouts USDT 29000000",
        "external:network_fees USDT 1000000",
      ].sort(),
    );
    expect(await invoiceStatus(server, m, invoiceId)).toBe("completed");
    await expectHealthyLedger(server);

    const second = await createRefund(m, {
      invoiceId,
      type: "crypto",
      amount: "20",
      withdrawToSameAddress: true,
      networkFeePaidBy: "merchant",
    });
    expect(second.answer.status).toBe(200);
    expect(second.answer.body.request).toMatchObject({
      amount: "20",
      to_address: "0xpayer",
      withdraw_to_same_address: true,
    });
    // The merchant bears the fee: 20 go out, 21 leave the balance.
    expect(await movementEntries(server, second.requestId, "debit")).toEqual(
      [
        `merchant:${m.id} USDT -20000000`,
        `merchant:${m.id} USDT -1000000`,
        "external:payouts USDT 20000000",
        "external:network_fees USDT 1000000",
      ].sort(),
    );
    expect(before - Number((await balances(server, m.id)).USDT)).toBe(51);
    expect(await invoiceStatus(server, m, invoiceId)).toBe("completed");

    const interfaceRefund = await refundCrypto(server, m, { invoiceId, address: "0xreturn-2" });
    expectProblem(interfaceRefund.answer, 400, "refund_exists");
    expect(await recorded(interfaceRefund.requestId)).toBe(false);
    await expectHealthyLedger(server);
  });

  it("debits once on a retry with the same request id, and answers 409 to the same id with another body", async () => {
    const { m, invoiceId } = await paidInvoice();
    const requestId = randomUUID();
    const body = { invoiceId, type: "crypto", amount: "10", address: "0xreturn" };
    const first = await createRefund(m, body, requestId);
    expect(first.answer.status).toBe(200);
    const balance = (await balances(server, m.id)).USDT;
    const retry = await createRefund(m, body, requestId);
    expect(retry.answer.status).toBe(200);
    expect(retry.answer.text).toBe(first.answer.text);
    expect((await balances(server, m.id)).USDT).toBe(balance);
    const debits = await server.ctx.store.db
      .selectFrom("ledger_movements")
      .select("id")
      .where("cause_id", "=", requestId)
      .execute();
    expect(debits).toHaveLength(1);

    const other = await createRefund(m, { ...body, amount: "11" }, requestId);
    expectProblem(other.answer, 409, "request_id_reused");
    expect((await balances(server, m.id)).USDT).toBe(balance);
    await expectHealthyLedger(server);
  });

  it("refuses more than is refundable with 400 and changes nothing; the id stays usable", async () => {
    const { m, invoiceId } = await paidInvoice();
    expect((await createRefund(m, { invoiceId, type: "crypto", amount: "60", address: "0xa" })).answer.status).toBe(
      200,
    );
    const balance = (await balances(server, m.id)).USDT;
    const requestId = randomUUID();
    const over = await createRefund(m, { invoiceId, type: "crypto", amount: "40.000001", address: "0xa" }, requestId);
    expectProblem(over.answer, 400, "amount_exceeds_refundable");
    expect(over.answer.body.errors).toEqual([{ pointer: "/amount", detail: expect.stringContaining("40 USDT") }]);
    expect(await recorded(requestId)).toBe(false);
    expect((await balances(server, m.id)).USDT).toBe(balance);
    const refunds = await server.ctx.store.db
      .selectFrom("refunds")
      .select("request_id")
      .where("invoice_id", "=", invoiceId)
      .execute();
    expect(refunds).toHaveLength(1);
    // The same request id, now within what is refundable, is accepted.
    const exact = await createRefund(m, { invoiceId, type: "crypto", amount: "40", address: "0xa" }, requestId);
    expect(exact.answer.status).toBe(200);
    await expectHealthyLedger(server);
  });

  it("refuses bad destinations, amounts and invoices with their codes", async () => {
    const { m, invoiceId } = await paidInvoice();
    const cases: [Record<string, unknown>, string][] = [
      [{ invoiceId, type: "crypto", amount: "1.5" }, "refund_destination_missing"],
      [{ invoiceId, type: "crypto", amount: "1.5", address: "0xa", claim: true }, "refund_destination_ambiguous"],
      [{ invoiceId, type: "fiat", amount: "1.5", address: "0xa" }, "refund_destination_not_allowed"],
      [{ invoiceId, type: "fiat", amount: "1.5" }, "settlement_not_fiat"],
      [{ invoiceId: randomUUID(), type: "crypto", amount: "1.5", address: "0xa" }, "refund_invoice_not_found"],
      [{ invoiceId, type: "crypto", amount: "abc", address: "0xa" }, "invalid_amount"],
      [{ invoiceId, type: "crypto", amount: "0", address: "0xa" }, "amount_not_positive"],
      [{ invoiceId, type: "crypto", amount: "1.0000001", address: "0xa" }, "amount_too_precise"],
      [{ invoiceId, type: "crypto", amount: "1", address: "0xa" }, "amount_below_network_fee"],
      [{ invoiceId, type: "crypto", amount: "1", address: "0xa", extra: 1 }, "validation_failed"],
    ];
    for (const [body, code] of cases) {
      const refused = await createRefund(m, body);
      expectProblem(refused.answer, 400, code);
      expect(await recorded(refused.requestId)).toBe(false);
    }
    await expectHealthyLedger(server);
  });

  it("moves the invoice through refund_processing to refunded once its refunds reach what was paid and all completed; a failure returns it to completed", async () => {
    const { m, invoiceId } = await paidInvoice();
    const a = await createRefund(m, { invoiceId, type: "crypto", amount: "70", address: "0xa" });
    expect(await invoiceStatus(server, m, invoiceId)).toBe("completed");
    expect((await payoutOutcome(server, m, a.requestId, { status: "completed" })).status).toBe(200);
    expect(await invoiceStatus(server, m, invoiceId)).toBe("completed");
    const b = await createRefund(m, { invoiceId, type: "crypto", amount: "30", address: "0xb" });
    expect(b.answer.status).toBe(200);
    expect(await invoiceStatus(server, m, invoiceId)).toBe("refund_processing");
    expectProblem(
      (await createRefund(m, { invoiceId, type: "crypto", amount: "1.5", address: "0xc" })).answer,
      400,
      "invoice_not_completed",
    );
    // b fails: its 30 are credited back and can be refunded again.
    const balance = (await balances(server, m.id)).USDT;
    expect((await payoutOutcome(server, m, b.requestId, { status: "failed" })).status).toBe(200);
    expect(await invoiceStatus(server, m, invoiceId)).toBe("completed");
    expect(Number((await balances(server, m.id)).USDT) - Number(balance)).toBe(30);
    await expectHealthyLedger(server);
    const c = await createRefund(m, { invoiceId, type: "crypto", amount: "30", address: "0xc" });
    expect(c.answer.status).toBe(200);
    expect(await invoiceStatus(server, m, invoiceId)).toBe("refund_processing");
    expect((await payoutOutcome(server, m, c.requestId, { status: "completed" })).status).toBe(200);
    expect(await invoiceStatus(server, m, invoiceId)).toBe("refunded");
    const listed = await merchant(server, m.apiKey, "GET", `/public/v1/refunds/${c.requestId}`);
    expect(listed.body.request.status).toBe("completed");
    await expectHealthyLedger(server);
  });

  it("waits for every refund's payout before refunded", async () => {
    const { m, invoiceId } = await paidInvoice();
    const a = await createRefund(m, { invoiceId, type: "crypto", amount: "50", address: "0xa" });
    const b = await createRefund(m, { invoiceId, type: "crypto", amount: "50", address: "0xb" });
    expect(await invoiceStatus(server, m, invoiceId)).toBe("refund_processing");
    await payoutOutcome(server, m, b.requestId, { status: "completed" });
    expect(await invoiceStatus(server, m, invoiceId)).toBe("refund_processing");
    await payoutOutcome(server, m, a.requestId, { status: "completed" });
    expect(await invoiceStatus(server, m, invoiceId)).toBe("refunded");
    await expectHealthyLedger(server);
  });
});
