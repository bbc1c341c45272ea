// Card disputes in the ledger (product §20): the hold when a dispute opens, its release when won, its loss to the payer when lost.
import type { Currency } from "./currencies.ts";
import {
  disputeHoldAccount,
  disputeReceivableAccount,
  type Movement,
  merchantAccount,
  movement,
  type Posting,
  SYSTEM_ACCOUNTS,
} from "./ledger.ts";
import { convert } from "./money.ts";

type Priced = Pick<Currency, "ticker" | "decimals" | "rateUsd">;

/** A provider's dispute status that closes it: `won` gives the hold back, `lost` (and anything else final) pays it out. */
export function disputeOutcome(status: string): "won" | "lost" {
  // warning_closed: an inquiry that closed without a chargeback; no money left.
  return status === "won" || status === "warning_closed" ? "won" : "lost";
}

/**
 * A dispute takes back at most what its payment brought: an amount above the payment is capped at
 * it (and flagged for the operator, who checks it with the provider), never held from the
 * merchant's other money.
 */
export function cappedDispute(
  disputedMinor: bigint,
  paymentMinor: bigint,
): { amountMinor: bigint; aboveThePayment: boolean } {
  const aboveThePayment = disputedMinor > paymentMinor;
  return { amountMinor: aboveThePayment ? paymentMinor : disputedMinor, aboveThePayment };
}

/** The hold in the settlement currency for a disputed amount in the payment's currency. */
export function heldAmount(amountMinor: bigint, currency: Priced, settlement: Priced): bigint {
  return currency.ticker === settlement.ticker ? amountMinor : convert(amountMinor, currency, settlement);
}

export interface Hold {
  disputeId: string;
  merchantId: string;
  /** The settlement currency's ticker. */
  currency: string;
  /** The whole hold. */
  heldMinor: bigint;
  /** The part the merchant's available balance does not cover: the operator's receivable. */
  receivableMinor: bigint;
}

/** What the available balance covers of a hold: all of it, or the balance when it is smaller. */
export function splitHold(
  heldMinor: bigint,
  availableMinor: bigint,
): { coveredMinor: bigint; receivableMinor: bigint } {
  const coveredMinor = availableMinor <= 0n ? 0n : availableMinor < heldMinor ? availableMinor : heldMinor;
  return { coveredMinor, receivableMinor: heldMinor - coveredMinor };
}

function holdPostings(hold: Hold, sign: 1n | -1n): Posting[] {
  const covered = hold.heldMinor - hold.receivableMinor;
  const postings: Posting[] = [
    { account: disputeHoldAccount(hold.merchantId), currency: hold.currency, amount: sign * hold.heldMinor },
  ];
  if (covered > 0n)
    postings.push({ account: merchantAccount(hold.merchantId), currency: hold.currency, amount: -sign * covered });
  if (hold.receivableMinor > 0n) {
    postings.push({
      account: disputeReceivableAccount(hold.merchantId),
      currency: hold.currency,
      amount: -sign * hold.receivableMinor,
    });
  }
  return postings;
}

/** A dispute opened: its amount leaves the available balance for the hold; what the balance lacks becomes a receivable. */
export function holdMovement(hold: Hold): Movement {
  return movement({
    cause: "dispute",
    causeId: hold.disputeId,
    kind: "hold",
    memo: `dispute ${hold.disputeId} opened: amount held`,
    postings: holdPostings(hold, 1n),
  });
}

/** A dispute won: the hold goes back where it came from (balance, receivable cleared). */
export function releaseMovement(hold: Hold): Movement {
  return movement({
    cause: "dispute",
    causeId: hold.disputeId,
    kind: "release",
    memo: `dispute ${hold.disputeId} won: hold released`,
    postings: holdPostings(hold, -1n),
  });
}

/** A dispute lost: the provider returned the disputed amount to the payer, out of the hold (the receivable stays owed). */
export function lossMovement(hold: Hold, disputedMinor: bigint, currency: Priced): Movement {
  const postings: Posting[] = [
    { account: disputeHoldAccount(hold.merchantId), currency: hold.currency, amount: -hold.heldMinor },
  ];
  if (currency.ticker === hold.currency) {
    postings.push({ account: SYSTEM_ACCOUNTS.incomingPayments, currency: hold.currency, amount: hold.heldMinor });
  } else {
    postings.push(
      { account: SYSTEM_ACCOUNTS.conversion, currency: hold.currency, amount: hold.heldMinor },
      { account: SYSTEM_ACCOUNTS.conversion, currency: currency.ticker, amount: -disputedMinor },
      { account: SYSTEM_ACCOUNTS.incomingPayments, currency: currency.ticker, amount: disputedMinor },
    );
  }
  return movement({
    cause: "dispute",
    causeId: hold.disputeId,
    kind: "loss",
    memo: `dispute ${hold.disputeId} lost: returned to the payer`,
    postings,
  });
}
