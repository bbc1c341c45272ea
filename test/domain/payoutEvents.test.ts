// Withdrawal and refund events (product §15): their types, their body around the request object, and the status filter's payout states.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES, payoutEventBody, payoutEventType } from "../../src/domain/callbackEvent.ts";
import { INVOICE_STATUSES } from "../../src/domain/invoiceStatus.ts";
import { PAYOUT_STATES, publicStatus, statesShownAs } from "../../src/domain/payout.ts";
import { publicRefundRequest, publicWithdrawalRequest } from "../../src/domain/payoutRequests.ts";
import { SUBSCRIPTION_EVENT_TYPES } from "../../src/domain/subscriptions.ts";
import { REFUND_KEYS } from "../support/refunds.ts";

const withdrawal = publicWithdrawalRequest({
  requestIdSent: "6F1C2D3E-4A5B-4C6D-8E7F-9A0B1C2D3E4F",
  currency: "USDT",
  amountMinor: 25_500_000n,
  decimals: 6,
  withdrawalMethodId: 7,
  payoutState: "completed",
  processorStatus: "completed",
  processorTxId: "0xabc",
  createdAt: "2026-03-01T12:29:55.004Z",
  updatedAt: "2026-03-01T12:30:00.120Z",
});

describe("payout events", () => {
  it("are the settlement, claim (product §25) and approval (product §31), subscription and deposit kinds after every invoice event, in a fixed order", () => {
    expect(EVENT_TYPES).toEqual([
      ...INVOICE_STATUSES.map((s) => `invoice.${s}`),
      "withdrawal.completed",
      "withdrawal.failed",
      "refund.completed",
      "refund.failed",
      "refund.claimed",
      "refund.expired",
      "withdrawal.awaiting_approval",
      "withdrawal.approved",
      "withdrawal.rejected",
      "refund.awaiting_approval",
      "refund.approved",
      "refund.rejected",
      ...SUBSCRIPTION_EVENT_TYPES,
      // A customer's deposit (product §30).
      "deposit.completed",
      "deposit.reversed",
      // A held deposit's refund: its deposit, never a refund request object (whose invoice_id is never null).
      "deposit.refund_completed",
      "deposit.refund_failed",
      "deposit.refund_claimed",
      "deposit.refund_expired",
      "deposit.refund_awaiting_approval",
      "deposit.refund_approved",
      "deposit.refund_rejected",
    ]);
    expect(payoutEventType("refund", "failed")).toBe("refund.failed");
    expect(payoutEventType("withdrawal", "completed")).toBe("withdrawal.completed");
  });

  it("wrap the request object as the signed operation answers it, compact, in envelope order", () => {
    const body = payoutEventBody("evt_1", "withdrawal.completed", withdrawal, "2026-03-01T12:30:00.120Z");
    expect(body).toBe(
      '{"type":"withdrawal.completed","id":"evt_1","created_at":"2026-03-01T12:30:00.120Z","data":{"request":' +
        '{"id":"6F1C2D3E-4A5B-4C6D-8E7F-9A0B1C2D3E4F","currency":"USDT","amount":"25.5","withdrawal_method_id":7,' +
        '"status":"completed","payout_processor_status":"completed","payout_processor_tx_id":"0xabc",' +
        '"created_at":"2026-03-01T12:29:55.004Z","updated_at":"2026-03-01T12:30:00.120Z"}}}',
    );
    const refund = publicRefundRequest({
      requestIdSent: "r-1",
      invoiceId: "inv_1",
      type: "fiat",
      currency: "EUR",
      amountMinor: 1000n,
      decimals: 2,
      toAddress: null,
      withdrawToSameAddress: false,
      status: "failed",
      processorStatus: null,
      processorTxId: null,
      createdAt: "2026-03-01T12:29:55.004Z",
      updatedAt: "2026-03-01T12:30:00.120Z",
    });
    const parsed = JSON.parse(payoutEventBody("evt_2", "refund.failed", refund, "2026-03-01T12:30:00.120Z"));
    expect(Object.keys(parsed.data.request)).toEqual(REFUND_KEYS);
    expect(parsed.data.request.amount).toBe("10");
  });

  it("refuse a created_at that is not RFC 3339 UTC with milliseconds", () => {
    expect(() => payoutEventBody("evt_1", "withdrawal.failed", withdrawal, "2026-03-01T12:30:00Z")).toThrow();
  });
});

describe("statesShownAs", () => {
  it("is the inverse of publicStatus: every payout state is shown as exactly one status", () => {
    fc.assert(
      fc.property(fc.constantFrom(...PAYOUT_STATES), (state) => {
        const status = publicStatus(state);
        expect(statesShownAs(status)).toContain(state);
        for (const other of (["processing", "completed", "failed"] as const).filter((s) => s !== status)) {
          expect(statesShownAs(other)).not.toContain(state);
        }
      }),
    );
    expect(statesShownAs("completed")).toEqual(["completed"]);
    expect(statesShownAs("processing")).toEqual([
      "awaiting_approval",
      "queued",
      "sending",
      "sent",
      "needs_reconciliation",
    ]);
  });
});
