// Public objects of the operations that payouts carry out: PublicWithdrawalRequest and PublicRefundRequest.
import { type Static, Type } from "typebox";
import { formatAmount } from "../domain/money.ts";
import { publicStatus } from "../domain/payout.ts";
import type { Payout } from "../store/payouts.ts";
import { findRefundView, type RefundView } from "../store/refunds.ts";
import type { Tx } from "../store/store.ts";
import { findWithdrawalView, type WithdrawalView } from "../store/withdrawals.ts";
import { Nullable } from "./schemas.ts";

const RequestStatus = Type.Union([Type.Literal("processing"), Type.Literal("completed"), Type.Literal("failed")]);

/** The asynchronous payout fields both request objects end with (interface: "the same asynchronous payout fields"). */
const PayoutFields = {
  status: RequestStatus,
  payout_processor_status: Nullable(Type.String()),
  payout_processor_tx_id: Nullable(Type.String()),
  created_at: Type.String({ format: "date-time" }),
  updated_at: Type.String({ format: "date-time" }),
};

export const PublicWithdrawalRequest = Type.Object(
  {
    id: Type.String({ description: "The request id of the signed CreateWithdrawal, as first accepted" }),
    currency: Type.String(),
    amount: Type.String({ description: "Plain decimal monetary string" }),
    withdrawal_method_id: Type.Integer(),
    ...PayoutFields,
  },
  { additionalProperties: false },
);

export const WithdrawalResponse = Type.Object(
  { request: PublicWithdrawalRequest },
  { additionalProperties: false, description: "The answer of CreateWithdrawal" },
);

export const PublicRefundRequest = Type.Object(
  {
    id: Type.String({ description: "The request id of the signed RefundCrypto or RefundFiat, as first accepted" }),
    invoice_id: Type.String(),
    type: Type.Union([Type.Literal("crypto"), Type.Literal("fiat")]),
    currency: Type.String({ description: "Crypto: the invoice currency; fiat: the settlement currency" }),
    amount: Type.String({ description: "Plain decimal monetary string: paid_amount, converted for a fiat refund" }),
    to_address: Nullable(Type.String({ description: "Destination of a crypto refund; null for a fiat refund" })),
    withdraw_to_same_address: Type.Boolean(),
    ...PayoutFields,
  },
  { additionalProperties: false },
);

export const RefundResponse = Type.Object(
  { request: PublicRefundRequest },
  { additionalProperties: false, description: "The answer of RefundCrypto and RefundFiat" },
);

/** The answer of whichever signed operation a payout carries out. */
export const OperationResponse = Type.Union([WithdrawalResponse, RefundResponse]);

/** Exactly the nine properties of PublicWithdrawalRequest, in the interface's order. */
export function publicWithdrawalRequest(w: WithdrawalView): Static<typeof PublicWithdrawalRequest> {
  return {
    id: w.requestIdSent,
    currency: w.currency,
    amount: formatAmount(w.amountMinor, w.decimals),
    withdrawal_method_id: w.withdrawalMethodId,
    status: publicStatus(w.payoutState),
    payout_processor_status: w.processorStatus,
    payout_processor_tx_id: w.processorTxId,
    created_at: w.createdAt,
    updated_at: w.updatedAt,
  };
}

/** Exactly the twelve properties of PublicRefundRequest, in the interface's order. */
export function publicRefundRequest(r: RefundView): Static<typeof PublicRefundRequest> {
  return {
    id: r.requestIdSent,
    invoice_id: r.invoiceId,
    type: r.type,
    currency: r.currency,
    amount: formatAmount(r.amountMinor, r.decimals),
    to_address: r.toAddress,
    withdraw_to_same_address: r.withdrawToSameAddress,
    status: r.status,
    payout_processor_status: r.processorStatus,
    payout_processor_tx_id: r.processorTxId,
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  };
}

/** `{ "request": ... }` of the operation a payout carries out, as its signed operation answers it, current. */
export async function operationResponse(tx: Tx, payout: Payout): Promise<Static<typeof OperationResponse>> {
  switch (payout.operation) {
    case "withdrawal": {
      const view = await findWithdrawalView(tx, payout.requestKey);
      if (!view) throw new Error(`invariant violated: payout ${payout.requestKey} has its withdrawal`);
      return { request: publicWithdrawalRequest(view) };
    }
    case "refund": {
      const view = await findRefundView(tx, payout.requestKey);
      if (!view) throw new Error(`invariant violated: payout ${payout.requestKey} has its refund`);
      return { request: publicRefundRequest(view) };
    }
  }
}
