// Refunds of product §25 (POST /public/v1/refunds/create): several per invoice, each of an amount within what is still refundable, to an address, the sender or a claim link, as a pure decision.
import { isFiat } from "./currencies.ts";
import { type AmountError, convert, formatAmount, parseAmount } from "./money.ts";
import type { RefundInvoiceFacts, RefundType } from "./refund.ts";
import { err, ok, type Result } from "./result.ts";

export type NetworkFeePayer = "merchant" | "payer";

export type PartialRefundRefusal =
  | "refund_destination_ambiguous"
  | "refund_destination_missing"
  | "refund_destination_not_allowed"
  | "refund_invoice_not_found"
  | "merchant_not_active"
  | "invoice_currency_is_fiat"
  | "settlement_not_fiat"
  | "invoice_not_completed"
  | "payments_unsettled"
  | "sender_address_unavailable"
  | AmountError
  | "amount_exceeds_refundable"
  | "amount_below_network_fee"
  /** Paid on several networks: a crypto refund goes out on one (product §23, docs/evm.md). */
  | "payments_on_several_networks";

/** Which body field a refusal is about, as a JSON Pointer (`insufficient_balance` is the ledger's). */
export const PARTIAL_REFUND_REFUSAL_POINTER: Record<PartialRefundRefusal | "insufficient_balance", string> = {
  refund_destination_ambiguous: "/",
  refund_destination_missing: "/",
  refund_destination_not_allowed: "/",
  refund_invoice_not_found: "/invoiceId",
  merchant_not_active: "/",
  invoice_currency_is_fiat: "/invoiceId",
  settlement_not_fiat: "/invoiceId",
  invoice_not_completed: "/invoiceId",
  payments_unsettled: "/invoiceId",
  sender_address_unavailable: "/withdrawToSameAddress",
  invalid_amount: "/amount",
  amount_not_positive: "/amount",
  amount_too_precise: "/amount",
  amount_exceeds_refundable: "/amount",
  amount_below_network_fee: "/amount",
  payments_on_several_networks: "/invoiceId",
  insufficient_balance: "/amount",
};

/** The destination fields of the body, as sent. */
export interface PartialRefundDestinationFields {
  readonly address?: string | undefined;
  readonly withdrawToSameAddress?: boolean | undefined;
  readonly claim?: boolean | undefined;
}

export type PartialRefundDestination =
  | { readonly kind: "address"; readonly address: string }
  | { readonly kind: "sender" }
  | { readonly kind: "claim" }
  /** A fiat refund goes back through the payment rails, never to an address. */
  | { readonly kind: "rails" };

export interface PartialRefundFacts {
  readonly type: RefundType;
  readonly destination: PartialRefundDestinationFields;
  /** The body's amount: in the invoice currency (crypto) or the settlement currency (fiat). */
  readonly amount: unknown;
  readonly networkFeePaidBy: NetworkFeePayer;
  readonly merchantStatus: string;
  /** The merchant's invoice, or null (another merchant's is null too). Currencies carry their network fee. */
  readonly invoice: (RefundInvoiceFacts & { readonly refundNetworkFeeMinor: bigint }) | null;
  /** What the invoice's live refunds already take of paid_amount (invoice currency); `whole`: one takes it all. */
  readonly taken: { readonly takenMinor: bigint; readonly whole: boolean };
}

export interface PartialRefundPlan {
  readonly type: RefundType;
  readonly destination: PartialRefundDestination;
  /** The refund's currency and amount (its public object), what it takes of paid_amount. */
  readonly currency: string;
  readonly amountMinor: bigint;
  /** In the invoice currency: what this refund takes of paid_amount. */
  readonly paidShareMinor: bigint;
  /** The payout: the amount less the network fee when the payer bears it. */
  readonly payoutMinor: bigint;
  readonly networkFeeMinor: bigint;
  /** What leaves the merchant's balance, in the settlement currency (converted when it differs). */
  readonly debit: { readonly currency: string; readonly amountMinor: bigint };
  /** Whether this refund brings the invoice's refunds up to all that was paid. */
  readonly exhausts: boolean;
}

function chooseDestination(
  type: RefundType,
  fields: PartialRefundDestinationFields,
): Result<PartialRefundDestination, PartialRefundRefusal> {
  const chosen = [fields.address !== undefined, fields.withdrawToSameAddress === true, fields.claim === true].filter(
    Boolean,
  ).length;
  if (type === "fiat") {
    if (chosen > 0) {
      return err(
        "refund_destination_not_allowed",
        "A fiat refund goes back through the payment it refunds: send no address, withdrawToSameAddress or claim.",
      );
    }
    return ok({ kind: "rails" });
  }
  if (chosen > 1) {
    return err(
      "refund_destination_ambiguous",
      "Send exactly one destination: address, withdrawToSameAddress: true, or claim: true.",
    );
  }
  if (fields.address !== undefined) return ok({ kind: "address", address: fields.address });
  if (fields.withdrawToSameAddress === true) return ok({ kind: "sender" });
  if (fields.claim === true) return ok({ kind: "claim" });
  return err(
    "refund_destination_missing",
    "A crypto refund needs a destination: address, withdrawToSameAddress: true, or claim: true (the payer chooses).",
  );
}

type InvoiceFacts = NonNullable<PartialRefundFacts["invoice"]>;

function checkInvoice(facts: PartialRefundFacts): Result<InvoiceFacts, PartialRefundRefusal> {
  const invoice = facts.invoice;
  if (invoice === null) return err("refund_invoice_not_found", "No invoice with this id belongs to your account.");
  if (facts.merchantStatus !== "active") {
    return err("merchant_not_active", "The merchant account is not active; refunds are not possible.");
  }
  if (facts.type === "crypto" && isFiat(invoice.currency)) {
    return err("invoice_currency_is_fiat", `The invoice was paid in ${invoice.currency.ticker}, a fiat currency.`);
  }
  if (facts.type === "fiat" && !isFiat(invoice.settlement)) {
    return err("settlement_not_fiat", `The invoice settles in ${invoice.settlement.ticker}, not in a fiat currency.`);
  }
  if (invoice.status !== "completed") {
    return err("invoice_not_completed", `Only completed invoices can be refunded; this one is ${invoice.status}.`);
  }
  if (invoice.unsettledPayments > 0) {
    return err("payments_unsettled", "The invoice has payments that are not confirmed yet; refund it once they are.");
  }
  return ok(invoice);
}

/**
 * Decides a refund of product §25, rules in this order: the destination (a fact of the body
 * alone), the invoice is the merchant's, the merchant is active, the kind fits the invoice's
 * currencies, the invoice is `completed` with settled payments, the sender address, then the
 * amount: a plain decimal in the refund's currency, at most what is refundable (paid_amount less
 * the live refunds' shares, converted for a fiat refund), and above the network fee when the payer
 * bears it. The balance is the ledger's rule.
 */
export function planPartialRefund(facts: PartialRefundFacts): Result<PartialRefundPlan, PartialRefundRefusal> {
  const destination = chooseDestination(facts.type, facts.destination);
  if (!destination.ok) return destination;
  const checked = checkInvoice(facts);
  if (!checked.ok) return checked;
  const invoice = checked.value;
  if (destination.value.kind === "sender" && invoice.soleSenderAddress === null) {
    return err(
      "sender_address_unavailable",
      "withdrawToSameAddress needs exactly one incoming transaction with a sender address; send an address instead.",
    );
  }
  const refunded = facts.type === "crypto" ? invoice.currency : invoice.settlement;
  const amount = parseAmount(facts.amount, refunded.decimals);
  if (!amount.ok) {
    const detail: Record<AmountError, string> = {
      invalid_amount: 'amount must be a plain decimal string such as "10.5".',
      amount_not_positive: "amount must be positive.",
      amount_too_precise: `amount has more fraction digits than ${refunded.ticker} has (${refunded.decimals}).`,
    };
    return err(amount.error, detail[amount.error]);
  }
  const remainingPaid = facts.taken.whole ? 0n : invoice.paidMinor - facts.taken.takenMinor;
  const toRefunded = (minor: bigint) =>
    refunded.ticker === invoice.currency.ticker ? minor : convert(minor, invoice.currency, refunded);
  const refundable = remainingPaid > 0n ? toRefunded(remainingPaid) : 0n;
  if (amount.value > refundable) {
    return err(
      "amount_exceeds_refundable",
      `amount is above what is still refundable on this invoice: ${formatAmount(refundable, refunded.decimals)} ${refunded.ticker}.`,
    );
  }
  const exhausts = amount.value === refundable;
  // What it takes of paid_amount: all that is left when it refunds all that is left, so conversion
  // rounding can never leave a remainder nobody can refund, nor take more than was paid.
  let share = remainingPaid;
  if (!exhausts) {
    share =
      refunded.ticker === invoice.currency.ticker
        ? amount.value
        : minBigint(convert(amount.value, refunded, invoice.currency), remainingPaid);
  }
  const fee = invoice.refundNetworkFeeMinor;
  const payerPays = facts.networkFeePaidBy === "payer";
  if (payerPays && amount.value <= fee) {
    return err(
      "amount_below_network_fee",
      `The payer bears the network fee of ${formatAmount(fee, refunded.decimals)} ${refunded.ticker}: amount must be above it (or send networkFeePaidBy: "merchant").`,
    );
  }
  const payoutMinor = payerPays ? amount.value - fee : amount.value;
  const leaving = payoutMinor + fee;
  const debitMinor =
    refunded.ticker === invoice.settlement.ticker ? leaving : convert(leaving, refunded, invoice.settlement);
  // A conversion can round a tiny amount down to nothing: no refund moves nothing.
  if (debitMinor <= 0n || share <= 0n) {
    return err("amount_not_positive", `amount is too small to refund in ${invoice.settlement.ticker}.`);
  }
  return ok({
    type: facts.type,
    destination: destination.value,
    currency: refunded.ticker,
    amountMinor: amount.value,
    paidShareMinor: share,
    payoutMinor,
    networkFeeMinor: fee,
    debit: { currency: invoice.settlement.ticker, amountMinor: debitMinor },
    exhausts,
  });
}

function minBigint(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
