// Public objects of the operations that payouts carry out: PublicWithdrawalRequest and PublicRefundRequest.
import { type Static, Type } from "typebox";
import { publicRefundRequest, publicWithdrawalRequest } from "../domain/payoutRequests.ts";
import { type Payout, payoutRequestObject } from "../store/payouts.ts";
import type { Tx } from "../store/store.ts";
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

export { publicRefundRequest, publicWithdrawalRequest };

/** `{ "request": ... }` of the operation a payout carries out, as its signed operation answers it, current. */
export async function operationResponse(tx: Tx, payout: Payout): Promise<Static<typeof OperationResponse>> {
  const request = await payoutRequestObject(tx, payout);
  return "invoice_id" in request ? { request } : { request };
}
