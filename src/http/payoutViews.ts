// Public objects of the operations that payouts carry out: PublicWithdrawalRequest and PublicRefundRequest.
import { type Static, Type } from "typebox";
import { publicRefundRequest, publicWithdrawalRequest } from "../domain/payoutRequests.ts";
import { PublicRefundRequest, PublicWithdrawalRequest } from "../domain/publicObjects.ts";
import { type Payout, payoutRequestObject } from "../store/payouts.ts";
import type { Tx } from "../store/store.ts";

export const WithdrawalResponse = Type.Object(
  { request: PublicWithdrawalRequest },
  { additionalProperties: false, description: "The answer of CreateWithdrawal" },
);

export const RefundResponse = Type.Object(
  { request: PublicRefundRequest },
  { additionalProperties: false, description: "The answer of RefundCrypto and RefundFiat" },
);

/** The answer of whichever signed operation a payout carries out. */
export const OperationResponse = Type.Union([WithdrawalResponse, RefundResponse]);

export { PublicRefundRequest, PublicWithdrawalRequest, publicRefundRequest, publicWithdrawalRequest };

/** `{ "request": ... }` of the operation a payout carries out, as its signed operation answers it, current. */
export async function operationResponse(tx: Tx, payout: Payout): Promise<Static<typeof OperationResponse>> {
  const request = await payoutRequestObject(tx, payout);
  return "invoice_id" in request ? { request } : { request };
}
