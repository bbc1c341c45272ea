// Accepting a refund inside its signed operation's transaction: the rules, the debit and payout, the refund row and the invoice's move to refund_processing.
import { type Currency, inUnitsOf } from "../domain/currencies.ts";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { atQuotedRate } from "../domain/rates.ts";
import {
  type CryptoDestinationFields,
  planRefund,
  type RefundInvoiceFacts,
  type RefundRefusal,
  type RefundType,
} from "../domain/refund.ts";
import { assert, err, ok, type Result } from "../domain/result.ts";
import { findCurrency } from "./currencies.ts";
import { applyTransition, incomingPaymentsSummary, lockInvoice } from "./invoices.ts";
import { findMerchant } from "./merchants.ts";
import { acceptPayout } from "./payouts.ts";
import { findRefundView, hasLiveRefund, insertRefund, type RefundView } from "./refunds.ts";
import { refundEntryOf } from "./settlement.ts";
import type { Tx } from "./store.ts";

export interface RefundRequest {
  /** Lowercased request id of the signed operation: the refund's id and its payout's. */
  requestKey: string;
  merchantId: string;
  type: RefundType;
  invoiceId: string;
  /** Crypto refunds: the destination fields of the body; null for fiat. */
  destination: CryptoDestinationFields | null;
  reason: string | null;
}

/**
 * Where the payout of a fiat refund goes. The interface gives a fiat refund no destination: it
 * goes back to the invoice's payer through the payment rails (the card provider of a card payment),
 * which the payout processor (or, live, the operator) resolves from the invoice.
 */
export function fiatRefundDestination(invoiceId: string): string {
  return `invoice-payer:${invoiceId}`;
}

async function catalogCurrency(tx: Tx, ticker: string): Promise<Currency> {
  const currency = await findCurrency(tx, ticker);
  assert(currency !== null, `currency ${ticker} of an invoice is in the catalog`);
  return currency;
}

/** Why a crypto refund of an invoice paid on several networks is refused (docs/evm.md). */
export const SEVERAL_NETWORKS_DETAIL =
  "The invoice was paid on more than one network; a crypto refund goes out on one network, so it cannot return these payments: ask the operator.";

/**
 * What the refund rules (a whole refund, product §8, and a part, §25) read of the invoice, at the
 * rates its quote fixed (product §22), not today's feeds. `entry`: the entry the payment came on
 * (refundEntryOf), null for the invoice's own.
 */
export async function refundInvoiceFacts(
  tx: Tx,
  invoice: NonNullable<Awaited<ReturnType<typeof lockInvoice>>>,
  entry: Currency | null,
): Promise<RefundInvoiceFacts & { currency: Currency; settlement: Currency }> {
  const rates = invoice.quoteRates ?? null;
  const first = await catalogCurrency(tx, invoice.currency);
  const currency = atQuotedRate(entry ?? first, rates);
  const settlement =
    invoice.settlementCurrency === invoice.currency
      ? currency
      : atQuotedRate(await catalogCurrency(tx, invoice.settlementCurrency), rates);
  const incoming = await incomingPaymentsSummary(tx, invoice.id);
  return {
    status: invoice.status,
    currency,
    settlement,
    // In the refunded entry's units: an entry with more decimals than the invoice's precision counts more.
    paidMinor: inUnitsOf(incoming.paidMinor, first.decimals, currency.decimals),
    soleSenderAddress: incoming.soleSenderAddress,
    unsettledPayments: incoming.unsettledCount,
  };
}

/**
 * Decides and performs a refund for the merchant. The invoice is locked first (lockInvoice), so
 * two refunds of one invoice take turns and the second sees the first; the unique index on live
 * refunds backs that up. A refusal may follow writes (the refund row, before the debit is refused),
 * so the caller must roll the transaction back: performRefund throws a Problem, which rolls back performOnce's transaction.
 */
export async function acceptRefund(
  tx: Tx,
  request: RefundRequest,
  now: string,
  publicBaseUrl: string,
  /** What this service pays out by: the payout's rail is chosen from it (store/payouts.ts payoutRailFor). */
  railPolicy?: PayoutRailPolicy,
): Promise<Result<RefundView, RefundRefusal | "insufficient_balance">> {
  const invoice = await lockInvoice(tx, request.invoiceId, request.merchantId);
  const merchant = await findMerchant(tx, request.merchantId);
  assert(merchant !== null, `the merchant of an API key exists (${request.merchantId})`);
  // A crypto refund goes out on the network the payment came on, from that entry's balance (product §23).
  const entry = invoice && request.type === "crypto" ? await refundEntryOf(tx, invoice) : null;
  const plan = planRefund({
    type: request.type,
    destination: request.destination,
    merchantStatus: merchant.status,
    invoice: invoice ? await refundInvoiceFacts(tx, invoice, entry === "several" ? null : entry) : null,
    hasLiveRefund: invoice ? await hasLiveRefund(tx, invoice.id) : false,
  });
  if (!plan.ok) return plan;
  assert(invoice !== null, "an accepted refund has its invoice");
  if (entry === "several") return err("payments_on_several_networks", SEVERAL_NETWORKS_DETAIL);
  const refund = plan.value;

  const recorded = await insertRefund(tx, {
    requestKey: request.requestKey,
    merchantId: request.merchantId,
    invoiceId: invoice.id,
    type: refund.type,
    currency: refund.currency,
    amountMinor: refund.amountMinor,
    debitCurrency: refund.debit.currency,
    debitMinor: refund.debit.amountMinor,
    toAddress: refund.toAddress,
    withdrawToSameAddress: refund.withdrawToSameAddress,
    reason: request.reason,
    createdAt: now,
  });
  // Unreachable while the invoice lock serializes refunds of one invoice; the index holds the rule regardless.
  if (!recorded) return err("refund_exists", "The invoice already has a refund that is processing or completed.");
  const accepted = await queueRefundPayout(tx, request, refund, invoice.id, now, railPolicy);
  if (!accepted.ok) {
    return err(
      "insufficient_balance",
      `The available ${refund.debit.currency} balance does not cover this refund; it debits the settlement currency.`,
    );
  }
  const moved = await applyTransition(tx, invoice, "refund_processing", "refund_accepted", now, publicBaseUrl);
  // The invoice is locked and was completed: the table allows completed -> refund_processing.
  assert(moved.ok, `invoice ${invoice.id} moves to refund_processing`);
  const view = await findRefundView(tx, request.requestKey);
  assert(view !== null, "the refund was just inserted");
  return ok(view);
}

/** The refund's debit and its queued payout (to its address, or the fiat refund's own destination). */
function queueRefundPayout(
  tx: Tx,
  request: RefundRequest,
  refund: Extract<ReturnType<typeof planRefund>, { ok: true }>["value"],
  invoiceId: string,
  now: string,
  railPolicy: PayoutRailPolicy | undefined,
) {
  return acceptPayout(
    tx,
    {
      requestKey: request.requestKey,
      operation: "refund",
      merchantId: request.merchantId,
      cause: "refund",
      debit: { currency: refund.debit.currency, amount: refund.debit.amountMinor },
      payout: {
        currency: refund.currency,
        amount: refund.amountMinor,
        destination: refund.toAddress ?? fiatRefundDestination(invoiceId),
      },
      memo: `${refund.type} refund of invoice ${invoiceId}`,
      railPolicy,
    },
    now,
  );
}
