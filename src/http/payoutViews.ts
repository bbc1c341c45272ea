// Public objects of the operations that payouts carry out: PublicWithdrawalRequest and PublicRefundRequest (an invoice's refund), and for a held deposit's refund its deposit.
import { type Static, Type } from "typebox";
import { publicRefundRequest, publicWithdrawalRequest } from "../domain/payoutRequests.ts";
import { PublicRefundRequest, PublicWithdrawalRequest } from "../domain/publicObjects.ts";
import { type Payout, payoutSubject } from "../store/payouts.ts";
import type { Tx } from "../store/store.ts";
import { Deposit } from "./depositAddressShapes.ts";

export const WithdrawalResponse = Type.Object(
  { request: PublicWithdrawalRequest },
  { additionalProperties: false, description: "The answer of CreateWithdrawal" },
);

export const RefundResponse = Type.Object(
  { request: PublicRefundRequest },
  { additionalProperties: false, description: "The answer of RefundCrypto and RefundFiat" },
);

/** A held deposit's refund's payout answers its deposit (product §30): a refund request object always names an invoice. */
export const DepositRefundResponse = Type.Object(
  { deposit: Deposit },
  { additionalProperties: false, description: "A held deposit's refund: the deposit, with its refund" },
);

/** The answer of whichever operation a payout carries out. */
export const OperationResponse = Type.Union([WithdrawalResponse, RefundResponse, DepositRefundResponse]);

export { PublicRefundRequest, PublicWithdrawalRequest, publicRefundRequest, publicWithdrawalRequest };

/** `{ "request": ... }` of the operation a payout carries out, as its signed operation answers it, current; `{ "deposit" }` for a held deposit's refund. */
export async function operationResponse(tx: Tx, payout: Payout): Promise<Static<typeof OperationResponse>> {
  const subject = await payoutSubject(tx, payout);
  if ("deposit" in subject) return subject;
  const { request } = subject;
  return "invoice_id" in request ? { request } : { request };
}
