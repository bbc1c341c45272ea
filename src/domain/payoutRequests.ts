// The public objects of the operations payouts carry out (PublicWithdrawalRequest, PublicRefundRequest), built in the interface's field order.
import { formatAmount } from "./money.ts";
import { type PayoutState, type PublicPayoutStatus, publicStatus } from "./payout.ts";
import type { PublicRefundRequestObject, PublicWithdrawalRequestObject } from "./publicObjects.ts";
import type { RefundType } from "./refund.ts";

/** The progress of a request's payout, as both objects show it. */
interface PayoutProgress {
  requestIdSent: string;
  /** The catalog entry's key (`USDT_BASE`). */
  currency: string;
  /** The ticker the interface answers (product §23: `USDT` for every entry of USDT); absent: `currency`. */
  ticker?: string;
  amountMinor: bigint;
  decimals: number;
  processorStatus: string | null;
  processorTxId: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A stored withdrawal request, as its public object shows it (the rules decide on `WithdrawalFacts`). */
export interface WithdrawalRequestRecord extends PayoutProgress {
  withdrawalMethodId: number;
  payoutState: PayoutState;
}

/** A stored refund request, as its public object shows it (the rules decide on `RefundFacts`). */
export interface RefundRequestRecord extends PayoutProgress {
  /** Always an invoice: a held deposit's refund (product §30) is never shown as a refund request object. */
  invoiceId: string;
  type: RefundType;
  toAddress: string | null;
  withdrawToSameAddress: boolean;
  status: PublicPayoutStatus;
}

export type { PublicRefundRequestObject, PublicWithdrawalRequestObject };

/** Exactly the nine properties of PublicWithdrawalRequest, in the interface's order. */
export function publicWithdrawalRequest(w: WithdrawalRequestRecord): PublicWithdrawalRequestObject {
  return {
    id: w.requestIdSent,
    currency: w.ticker ?? w.currency,
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
export function publicRefundRequest(r: RefundRequestRecord): PublicRefundRequestObject {
  return {
    id: r.requestIdSent,
    invoice_id: r.invoiceId,
    type: r.type,
    currency: r.ticker ?? r.currency,
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
