// RefundFiat of a card payment in live mode (product §20): the processor of the card rail, which refunds at the card provider.
import { type CardProvider, toProviderMinor } from "../domain/cardProvider.ts";
import type { CheckAnswer, Payout, PayoutProcessor, SendAnswer } from "../domain/payout.ts";
import { assertOk } from "../domain/result.ts";
import type { Store, Tx } from "../store/store.ts";

/** The provider payment a refund's payout returns, with its amount in the provider's units; null for anything but a card payment's fiat refund. */
export async function cardPaymentOfRefund(
  tx: Tx,
  payout: Payout,
): Promise<{ paymentId: string; amountMinor: bigint } | null> {
  if (payout.operation !== "refund") return null;
  const row = await tx.db
    .selectFrom("refunds")
    .innerJoin("card_checkouts", "card_checkouts.invoice_id", "refunds.invoice_id")
    .innerJoin("invoices", "invoices.id", "refunds.invoice_id")
    .innerJoin("currencies", "currencies.ticker", "invoices.currency")
    .innerJoin("invoice_payments", (join) =>
      join
        .onRef("invoice_payments.invoice_id", "=", "refunds.invoice_id")
        .onRef("invoice_payments.tx_id", "=", "card_checkouts.payment_id"),
    )
    .select(["card_checkouts.payment_id", "invoice_payments.amount", "currencies.decimals", "currencies.ticker"])
    .where("refunds.request_id", "=", payout.requestKey)
    .where("refunds.type", "=", "fiat")
    .executeTakeFirst();
  if (!row || row.payment_id === null) return null;
  const amount = toProviderMinor(BigInt(row.amount), Number(row.decimals), row.ticker);
  // The catalog's amount came from the provider's, so it converts back exactly.
  assertOk(amount, `card payment ${row.payment_id} converts back`);
  return { paymentId: row.payment_id, amountMinor: amount.value };
}

/**
 * Refunds of card payments go to the provider: our refund's request id is its idempotency key, so
 * no retry makes a second refund. The refund stays `processing` until the provider's webhook gives
 * its final status (applyCardProviderEvent settles the payout), so `check` never asks. A call that
 * ends without an answer leaves the payout to reconciliation, as every unclear hand-over; the
 * provider's webhook settles it even there. Only card-rail payouts come here (the rail was chosen
 * at acceptance because the refund returns a card payment); one that is not is set aside too.
 */
export function cardRefundProcessor(store: Store, provider: CardProvider): PayoutProcessor {
  return {
    name: provider.name,
    async send(payout): Promise<SendAnswer> {
      const card = await cardPaymentOfRefund(store, payout);
      if (card === null) throw new Error(`payout ${payout.requestKey} is on the card rail but refunds no card payment`);
      const refund = await provider.createRefund({
        refundRequestId: payout.requestKey,
        paymentId: card.paymentId,
        amountMinor: card.amountMinor,
      });
      if (refund.ok) {
        return {
          kind: "accepted",
          processorStatus: refund.value.status,
          processorTxId: refund.value.refundId,
          checkAt: null,
        };
      }
      if (refund.error === "provider_refused") {
        return {
          kind: "refused",
          processorStatus: "refused",
          reason: refund.detail ?? "the card provider refused the refund",
        };
      }
      throw new Error(`card provider did not answer the refund: ${refund.detail ?? "unavailable"}`);
    },
    async check(payout): Promise<CheckAnswer> {
      return { kind: "pending", processorStatus: payout.processorStatus ?? "pending", checkAt: null };
    },
  };
}
