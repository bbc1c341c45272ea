// Public objects of the operations that payouts carry out: PublicWithdrawalRequest (and later PublicRefundRequest).
import { Type } from "typebox";
import { formatAmount } from "../domain/money.ts";
import { publicStatus } from "../domain/payout.ts";
import type { Payout } from "../store/payouts.ts";
import type { Tx } from "../store/store.ts";
import { findWithdrawalView, type WithdrawalView } from "../store/withdrawals.ts";
import { Nullable } from "./schemas.ts";

export const PublicWithdrawalRequest = Type.Object(
  {
    id: Type.String({ description: "The request id of the signed CreateWithdrawal, as first accepted" }),
    currency: Type.String(),
    amount: Type.String({ description: "Plain decimal monetary string" }),
    withdrawal_method_id: Type.Integer(),
    status: Type.Union([Type.Literal("processing"), Type.Literal("completed"), Type.Literal("failed")]),
    payout_processor_status: Nullable(Type.String()),
    payout_processor_tx_id: Nullable(Type.String()),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

export const WithdrawalResponse = Type.Object(
  { request: PublicWithdrawalRequest },
  { additionalProperties: false, description: "The answer of CreateWithdrawal" },
);

/** Exactly the nine properties of PublicWithdrawalRequest, in the interface's order. */
export function publicWithdrawalRequest(w: WithdrawalView) {
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

/** `{ "request": ... }` of the operation a payout carries out, as its signed operation answers it, current. */
export async function operationResponse(
  tx: Tx,
  payout: Payout,
): Promise<{ request: ReturnType<typeof publicWithdrawalRequest> }> {
  switch (payout.operation) {
    case "withdrawal": {
      const view = await findWithdrawalView(tx, payout.requestKey);
      if (!view) throw new Error(`invariant violated: payout ${payout.requestKey} has its withdrawal`);
      return { request: publicWithdrawalRequest(view) };
    }
  }
}
