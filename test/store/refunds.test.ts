// Refund repository: the database itself allows at most one live (processing or completed) refund per invoice.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hasLiveRefund, insertRefund, type RefundRecord } from "../../src/store/refunds.ts";
import { claimSignedRequest } from "../../src/store/signedRequests.ts";
import { nowIso, type Tx } from "../../src/store/store.ts";
import { useTestServer } from "../support/fixture.ts";
import {
  completedInvoice,
  feeFreeMerchant,
  payoutOutcome,
  type RefundMerchant,
  refundFiat,
} from "../support/refunds.ts";

const server = useTestServer();

class RolledBack extends Error {}

/** Runs `work` in a transaction that is always rolled back, answering what it returned. */
async function tryAndRollBack<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
  let value: T | undefined;
  await server.ctx.store
    .transaction(async (tx) => {
      value = await work(tx);
      throw new RolledBack();
    })
    .catch((error: unknown) => {
      if (!(error instanceof RolledBack)) throw error;
    });
  return value as T;
}

/** A second refund of the invoice, under a newly claimed request id, written past every rule of the code. */
async function secondRefund(tx: Tx, m: RefundMerchant, invoiceId: string): Promise<RefundRecord> {
  const requestKey = randomUUID();
  const now = nowIso();
  const claim = await claimSignedRequest(
    tx,
    { requestKey, requestIdSent: requestKey, merchantId: m.id, route: "/test", bodyHash: "h" },
    now,
  );
  expect(claim.kind).toBe("claimed");
  return {
    requestKey,
    merchantId: m.id,
    invoiceId,
    type: "fiat",
    currency: "EUR",
    amountMinor: 1000n,
    debitCurrency: "EUR",
    debitMinor: 1000n,
    toAddress: null,
    withdrawToSameAddress: false,
    reason: null,
    createdAt: now,
  };
}

/** Inserts a completed refund row directly, without ON CONFLICT. */
function rawInsert(tx: Tx, record: RefundRecord): Promise<"inserted" | "refused"> {
  return tx.db
    .insertInto("refunds")
    .values({
      request_id: record.requestKey,
      merchant_id: record.merchantId,
      invoice_id: record.invoiceId,
      type: record.type,
      currency: record.currency,
      amount: record.amountMinor.toString(),
      debit_currency: record.debitCurrency,
      debit_amount: record.debitMinor.toString(),
      to_address: null,
      withdraw_to_same_address: 0,
      reason: null,
      status: "completed",
      created_at: record.createdAt,
    })
    .execute()
    .then(
      () => "inserted" as const,
      () => "refused" as const,
    );
}

describe("one live refund per invoice", () => {
  it("refuses a second processing or completed refund, and allows one after a failed refund", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "EUR", amount: "10" });
    const first = await refundFiat(server, m, { invoiceId: invoice.id });
    expect(first.answer.status).toBe(200);

    expect(await hasLiveRefund(server.ctx.store, invoice.id)).toBe(true);
    const whileProcessing = await tryAndRollBack(async (tx) => insertRefund(tx, await secondRefund(tx, m, invoice.id)));
    expect(whileProcessing).toBe(false);
    // Without ON CONFLICT the index raises: the rule is the database's, not only the code's.
    expect(await tryAndRollBack(async (tx) => rawInsert(tx, await secondRefund(tx, m, invoice.id)))).toBe("refused");

    expect((await payoutOutcome(server, m, first.requestId, { status: "failed" })).status).toBe(200);
    expect(await hasLiveRefund(server.ctx.store, invoice.id)).toBe(false);
    const afterFailure = await tryAndRollBack(async (tx) => insertRefund(tx, await secondRefund(tx, m, invoice.id)));
    expect(afterFailure).toBe(true);
    // The same raw row is accepted now, so its refusal above was the index's.
    expect(await tryAndRollBack(async (tx) => rawInsert(tx, await secondRefund(tx, m, invoice.id)))).toBe("inserted");
  });
});
