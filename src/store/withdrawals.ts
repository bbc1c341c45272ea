// Withdrawal repository: the accepted withdrawal's facts, read together with its payout for the public object.
import type { PayoutState } from "../domain/payout.ts";
import { isPayoutState } from "../domain/payout.ts";
import { assert } from "../domain/result.ts";
import { placeholder, preparedQuery, preparedStatement } from "./prepared.ts";
import type { Tx } from "./store.ts";

export interface WithdrawalRecord {
  requestKey: string;
  merchantId: string;
  withdrawalMethodId: number;
  currency: string;
  amountMinor: bigint;
  createdAt: string;
}

// CreateWithdrawal runs both on every request: compiled once (see prepared.ts).
const insertStatement = preparedStatement(
  ["requestKey", "merchantId", "methodId", "currency", "amount", "createdAt"] as const,
  (db, a) =>
    db.insertInto("withdrawals").values({
      request_id: a.requestKey,
      merchant_id: a.merchantId,
      withdrawal_method_id: placeholder<number>(a.methodId),
      currency: a.currency,
      amount: a.amount,
      created_at: a.createdAt,
    }),
);

export async function insertWithdrawal(tx: Tx, withdrawal: WithdrawalRecord): Promise<void> {
  await insertStatement(tx, {
    requestKey: withdrawal.requestKey,
    merchantId: withdrawal.merchantId,
    methodId: withdrawal.withdrawalMethodId,
    currency: withdrawal.currency,
    amount: withdrawal.amountMinor.toString(),
    createdAt: withdrawal.createdAt,
  });
}

/** A withdrawal with what its public object needs: the id as first accepted, decimals, and the payout's progress. */
export interface WithdrawalView extends WithdrawalRecord {
  requestIdSent: string;
  decimals: number;
  payoutState: PayoutState;
  processorStatus: string | null;
  processorTxId: string | null;
  updatedAt: string;
}

const viewQuery = preparedQuery(["requestKey"] as const, (db, a) =>
  db
    .selectFrom("withdrawals")
    .innerJoin("signed_requests", "signed_requests.request_id", "withdrawals.request_id")
    .innerJoin("payouts", "payouts.request_id", "withdrawals.request_id")
    .innerJoin("currencies", "currencies.ticker", "withdrawals.currency")
    .select([
      "withdrawals.request_id",
      "withdrawals.merchant_id",
      "withdrawals.withdrawal_method_id",
      "withdrawals.currency",
      "withdrawals.amount",
      "withdrawals.created_at",
      "signed_requests.request_id_sent",
      "currencies.decimals",
      "payouts.state",
      "payouts.processor_status",
      "payouts.processor_tx_id",
      "payouts.updated_at",
    ])
    .where("withdrawals.request_id", "=", a.requestKey),
);

export async function findWithdrawalView(tx: Tx, requestKey: string): Promise<WithdrawalView | null> {
  const [r] = await viewQuery(tx, { requestKey });
  if (!r) return null;
  assert(isPayoutState(r.state), `payout ${r.request_id} has a known state`);
  return {
    requestKey: r.request_id,
    merchantId: r.merchant_id,
    withdrawalMethodId: Number(r.withdrawal_method_id),
    currency: r.currency,
    amountMinor: BigInt(r.amount),
    createdAt: r.created_at,
    requestIdSent: r.request_id_sent,
    decimals: Number(r.decimals),
    payoutState: r.state,
    processorStatus: r.processor_status,
    processorTxId: r.processor_tx_id,
    updatedAt: r.updated_at,
  };
}
