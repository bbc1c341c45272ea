// The card provider's fee of a payment or a refund (product §20), read from its balance transaction and posted as the operator's cost.
import { type Movement, movement, SYSTEM_ACCOUNTS, transfer } from "./ledger.ts";
import { err, ok, type Result } from "./result.ts";

/**
 * What the provider's balance transaction says of one payment or refund, in the provider's minor
 * units of the currency it settled in (the account's, not necessarily the payment's).
 */
export interface BalanceTransaction {
  /** The provider's id (`txn_…`). */
  id: string;
  /** `charge`, `payment`, `refund`, … */
  type: string;
  /** ISO 4217 code, upper case. */
  currency: string;
  amountMinor: bigint;
  /** What the provider kept; negative when it gave a fee back. */
  feeMinor: bigint;
  netMinor: bigint;
  feeDetails: readonly { type: string; amountMinor: bigint; currency: string }[];
}

/** Which of ours the fee belongs to: a card payment (its payment id) or a card refund (the provider's refund id). */
export type CardFeeSource = "payment" | "refund";

/**
 * Refuses a balance transaction whose figures do not add up as the provider's always do (net is
 * amount less fee; the fee is the sum of its details, in its currency): booking it would book a guess.
 */
export function checkBalanceTransaction(bt: BalanceTransaction): Result<BalanceTransaction, "inconsistent_fee"> {
  if (bt.amountMinor - bt.feeMinor !== bt.netMinor) {
    return err("inconsistent_fee", `balance transaction ${bt.id}: net ${bt.netMinor} is not amount less fee`);
  }
  const details = bt.feeDetails.reduce((sum, d) => sum + d.amountMinor, 0n);
  if (bt.feeDetails.length > 0 && details !== bt.feeMinor) {
    return err(
      "inconsistent_fee",
      `balance transaction ${bt.id}: fee details sum to ${details}, fee is ${bt.feeMinor}`,
    );
  }
  if (bt.feeDetails.some((d) => d.currency !== bt.currency)) {
    return err("inconsistent_fee", `balance transaction ${bt.id}: a fee detail is not in ${bt.currency}`);
  }
  return ok(bt);
}

/**
 * The movement of a fee already in the ledger's minor units: the operator's card-fee account pays
 * the provider, or is paid back when the provider returned a fee. Keyed by the payment or refund
 * (cause `card_fee`, its id, kind the source), so posting it again posts nothing. No fee, no movement.
 */
export function cardFeeMovement(fee: {
  source: CardFeeSource;
  sourceId: string;
  balanceTransactionId: string;
  currency: string;
  feeMinor: bigint;
}): Movement | null {
  if (fee.feeMinor === 0n) return null;
  const postings =
    fee.feeMinor > 0n
      ? transfer(SYSTEM_ACCOUNTS.operatorCardFees, SYSTEM_ACCOUNTS.cardProvider, fee.currency, fee.feeMinor)
      : transfer(SYSTEM_ACCOUNTS.cardProvider, SYSTEM_ACCOUNTS.operatorCardFees, fee.currency, -fee.feeMinor);
  return movement({
    cause: "card_fee",
    causeId: fee.sourceId,
    kind: fee.source,
    memo: `card provider fee of ${fee.source} ${fee.sourceId} (balance transaction ${fee.balanceTransactionId})`,
    postings,
  });
}
