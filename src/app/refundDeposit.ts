// The merchant's refund of a deposit held at a deactivated address (product §30, §25): a claim refund paid from the merchant's deposit hold, the deposit `refunded` until its claim expires or its payout fails.
import { randomUUID } from "node:crypto";
import type { Currency } from "../domain/currencies.ts";
import { type DepositRefundObject, depositHoldAccount } from "../domain/depositAddresses.ts";
import { assert } from "../domain/result.ts";
import { type DepositRow, moveDeposit } from "../store/depositAddresses.ts";
import { postPayoutDebit } from "../store/payouts.ts";
import { insertRefund, latestDepositRefund, recordDepositRefundRequest } from "../store/refunds.ts";
import type { Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { claimUrl, openClaim } from "./createPartialRefund.ts";

/**
 * The refund a held deposit's resolve made, as its deposit carries it, with the payer's claim link:
 * a bearer secret answered by this resolve only (GET and events never show it), as a partial
 * refund's creation answers its own.
 */
export type DepositRefund = DepositRefundObject & { claimUrl: string };

/** What refunding a held deposit answers: the refund, `changed` when it left `held` meanwhile, or `fees_exceed_amount`. */
export type DepositRefundMove =
  | { kind: "moved"; row: DepositRow; refund: DepositRefund }
  | { kind: "changed" }
  | { kind: "fees_exceed_amount" };

/**
 * Refunds a held deposit once (compare-and-set held → refunded, so a racing credit or refund of it
 * finds it moved): a claim refund (§25) of its amount, the payer bearing the entry's network fee as
 * invoices' claim refunds do, debited from the merchant's deposit hold now. The payer claims it at
 * the link; a claim that expires or a payout that fails credits the hold back and the deposit is
 * `held` again (store/refunds.ts returnDepositToHold), so the merchant decides anew.
 */
export async function refundHeldDeposit(
  ctx: Pick<ServiceContext, "config">,
  tx: Tx,
  input: { row: DepositRow; entry: Currency; now: string },
): Promise<DepositRefundMove> {
  const { row, entry, now } = input;
  const amount = BigInt(row.amount);
  const networkFee = entry.networkFeeMinor;
  if (amount <= networkFee) return { kind: "fees_exceed_amount" };
  const moved = await moveDeposit(tx, row.id, "held", { status: "refunded" }, now);
  if (moved === null) return { kind: "changed" };
  const request = { requestKey: randomUUID(), merchantId: row.merchant_id };
  await recordDepositRefundRequest(tx, { id: row.id, merchantId: row.merchant_id }, request.requestKey, now);
  await insertRefund(tx, {
    ...request,
    invoiceId: null,
    depositId: row.id,
    type: "crypto",
    currency: entry.ticker,
    amountMinor: amount,
    debitCurrency: entry.ticker,
    debitMinor: amount,
    toAddress: null,
    withdrawToSameAddress: false,
    reason: `refund of held deposit ${row.id}`,
    createdAt: now,
  });
  const debited = await postPayoutDebit(
    tx,
    {
      ...request,
      operation: "refund",
      cause: "refund",
      debit: { currency: entry.ticker, amount },
      debitAccount: depositHoldAccount(row.merchant_id),
      // No payout until the payer claims it: claimRefund queues it to the claimed address.
      payout: { currency: entry.ticker, amount: amount - networkFee, destination: `claim:${request.requestKey}` },
      networkFee,
      memo: `crypto refund of held deposit ${row.id} (claim link)`,
    },
    now,
  );
  // The hold is not a merchant balance: nothing refuses its debit, and the compare-and-set debits it once.
  assert(debited.ok, `the hold pays deposit ${row.id}'s refund`);
  const claim = await openClaim(tx, request, now);
  const refund = await latestDepositRefund(tx, row.id);
  assert(refund?.id === request.requestKey, "the refund just made is the deposit's latest");
  return {
    kind: "moved",
    row: moved,
    refund: { ...refund, claimUrl: claimUrl(ctx.config.publicBaseUrl, claim.token) },
  };
}
