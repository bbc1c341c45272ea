// The event of a refund's step (claimed, expired, settled, approval): an invoice's refund records refund.<step> with its request object; a held deposit's records deposit.refund_<step> with its deposit (product §30), so no refund request object ever shows a null invoice_id.
import { depositRefundEventType, type RefundStep } from "../domain/callbackEvent.ts";
import { publicRefundRequest } from "../domain/payoutRequests.ts";
import { assert } from "../domain/result.ts";
import { currentDepositObject } from "./depositAddresses.ts";
import { recordDepositEvent, recordPayoutEvent } from "./events.ts";
import { findMerchant } from "./merchants.ts";
import { findRefundView, isInvoiceRefund } from "./refunds.ts";
import type { Tx } from "./store.ts";

/**
 * Records the step's event in the caller's transaction, with the refund (or its deposit) as it now
 * stands. An invoice's goes to the merchant's default callback URL, as every refund event; a
 * deposit's to its address's callbackUrl, else the merchant's default, as deposit.completed does.
 */
export async function recordRefundStepEvent(
  tx: Tx,
  input: { merchantId: string; refundId: string; step: RefundStep },
  now: string,
): Promise<void> {
  const { merchantId, refundId, step } = input;
  const merchant = await findMerchant(tx, merchantId);
  const view = await findRefundView(tx, refundId);
  assert(merchant !== null && view !== null, `refund ${refundId} has its merchant and refund`);
  if (isInvoiceRefund(view)) {
    await recordPayoutEvent(
      tx,
      {
        merchantId,
        type: `refund.${step}`,
        subjectId: refundId,
        request: publicRefundRequest(view),
        callbackUrl: merchant.defaultCallbackUrl,
      },
      now,
    );
    return;
  }
  assert(view.depositId != null, `refund ${refundId} names an invoice or a deposit`);
  const { deposit, address } = await currentDepositObject(tx, view.depositId);
  const callbackUrl = address.callback_url ?? merchant.defaultCallbackUrl;
  await recordDepositEvent(tx, depositRefundEventType(step), deposit, { merchantId, callbackUrl, now });
}
