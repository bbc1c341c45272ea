// RefundCrypto and RefundFiat rules of the interface and product §7 (destination, invoice, amounts), as pure decisions over what the store read.
import { type Currency, isFiat } from "./currencies.ts";
import type { InvoiceStatus } from "./invoiceStatus.ts";
import { convert } from "./money.ts";
import type { PayoutOutcome } from "./payout.ts";
import { assert, err, ok, type Result } from "./result.ts";
import type { StatusChange } from "./settlement.ts";

export type RefundType = "crypto" | "fiat";

/** What a refund's payout does; the public `status` of a refund is its payout's (product §7). */
export type RefundStatus = "processing" | "completed" | "failed";

export type DestinationRefusal = "refund_destination_ambiguous" | "refund_destination_missing";

export type RefundRefusal =
  | DestinationRefusal
  | "refund_invoice_not_found"
  | "merchant_not_active"
  | "invoice_currency_is_fiat"
  | "settlement_not_fiat"
  | "refund_exists"
  | "invoice_not_completed"
  | "payments_unsettled"
  | "sender_address_unavailable"
  /** Paid on several networks: a crypto refund goes out on one (product §23, docs/evm.md). */
  | "payments_on_several_networks";

/** Which body field a refusal is about, as a JSON Pointer (`insufficient_balance` is the ledger's). */
export const REFUND_REFUSAL_POINTER: Record<RefundRefusal | "insufficient_balance", string> = {
  refund_destination_ambiguous: "/",
  refund_destination_missing: "/",
  refund_invoice_not_found: "/invoiceId",
  merchant_not_active: "/",
  invoice_currency_is_fiat: "/invoiceId",
  settlement_not_fiat: "/invoiceId",
  refund_exists: "/invoiceId",
  invoice_not_completed: "/invoiceId",
  payments_unsettled: "/invoiceId",
  sender_address_unavailable: "/withdrawToSameAddress",
  payments_on_several_networks: "/invoiceId",
  insufficient_balance: "/invoiceId",
};

/** Where a crypto refund goes: an explicit address, or the sender of the invoice's only incoming transaction. */
export type CryptoDestination = { readonly kind: "address"; readonly address: string } | { readonly kind: "sender" };

/**
 * The two forms of RefundCrypto (interface rule 6, product §7): `address` alone, or
 * `withdrawToSameAddress: true` alone. `withdrawToSameAddress: false` says "not the sender", so
 * with an address it is the address form and without one nothing names a destination.
 */
export function cryptoDestination(body: CryptoDestinationFields): Result<CryptoDestination, DestinationRefusal> {
  const toSender = body.withdrawToSameAddress === true;
  if (toSender && body.address !== undefined) {
    return err(
      "refund_destination_ambiguous",
      "Send either address or withdrawToSameAddress: true, not both: the refund has one destination.",
    );
  }
  if (toSender) return ok({ kind: "sender" });
  if (body.address !== undefined) return ok({ kind: "address", address: body.address });
  return err(
    "refund_destination_missing",
    "A crypto refund needs a destination: send address, or withdrawToSameAddress: true to refund the sender.",
  );
}

type Priced = Pick<Currency, "ticker" | "type" | "decimals" | "rateUsd">;

/** What the rules need to know about the invoice. */
export interface RefundInvoiceFacts {
  readonly status: InvoiceStatus;
  /** The payment currency (`currency`). */
  readonly currency: Priced;
  /** `settlement_currency`: what the merchant was credited in, so what is debited. */
  readonly settlement: Priced;
  /** `paid_amount` in minor units of `currency`. */
  readonly paidMinor: bigint;
  /** The sender address of the only incoming transaction, when there is exactly one and it has one. */
  readonly soleSenderAddress: string | null;
  /** Payments counted in paid_amount that are not settled yet (unconfirmed, or waiting for screening). */
  readonly unsettledPayments: number;
}

/** The destination fields of a RefundCrypto body, as sent. */
export interface CryptoDestinationFields {
  readonly address?: string | undefined;
  readonly withdrawToSameAddress?: boolean | undefined;
}

export interface RefundFacts {
  readonly type: RefundType;
  /** Crypto refunds: the body's destination fields; null for fiat (its body has none). */
  readonly destination: CryptoDestinationFields | null;
  /** The merchant's status; only `active` merchants move money out. */
  readonly merchantStatus: string;
  /** The merchant's invoice, or null when there is none with that id (another merchant's is null too). */
  readonly invoice: RefundInvoiceFacts | null;
  /** The invoice has a refund that is processing or completed. */
  readonly hasLiveRefund: boolean;
}

/** An accepted refund: what is paid out, where, and what leaves the merchant's balance. */
export interface RefundPlan {
  readonly type: RefundType;
  /** Currency and amount of the refund (and of its payout). */
  readonly currency: string;
  readonly amountMinor: bigint;
  /** Null for fiat refunds: the payout goes back through the payment rails, not to an address. */
  readonly toAddress: string | null;
  readonly withdrawToSameAddress: boolean;
  /** In the settlement currency: the refund's value, converted when the currencies differ. */
  readonly debit: { readonly currency: string; readonly amountMinor: bigint };
}

function convertTo(amountMinor: bigint, from: Priced, to: Priced): bigint {
  return from.ticker === to.ticker ? amountMinor : convert(amountMinor, from, to);
}

/**
 * Decides a refund, rules in this order: the destination form (crypto; a fact of the body alone),
 * the invoice is the merchant's, the merchant is active, the kind of refund fits the invoice's
 * currencies, no live refund, the invoice is `completed`, the sender address (withdrawToSameAddress).
 * A live refund is named before the status it causes (`refund_processing`, `refunded`), because
 * it is the more precise reason. The balance is the ledger's rule: only the balance row locked
 * in the accepting transaction can answer it under concurrency.
 *
 * Amounts (product §7): a crypto refund returns `paid_amount` in the invoice currency; a fiat
 * refund returns `paid_amount` converted into the settlement currency. Either debits the
 * settlement currency by the refund's value, converted (rounded half up) when it differs.
 */
export function planRefund(facts: RefundFacts): Result<RefundPlan, RefundRefusal> {
  let destination: CryptoDestination | null = null;
  if (facts.type === "crypto") {
    const chosen = cryptoDestination(facts.destination ?? {});
    if (!chosen.ok) return chosen;
    destination = chosen.value;
  }
  const invoice = facts.invoice;
  if (invoice === null) return err("refund_invoice_not_found", "No invoice with this id belongs to your account.");
  if (facts.merchantStatus !== "active") {
    return err("merchant_not_active", "The merchant account is not active; refunds are not possible.");
  }
  if (facts.type === "crypto" && isFiat(invoice.currency)) {
    return err(
      "invoice_currency_is_fiat",
      `The invoice was paid in ${invoice.currency.ticker}, a fiat currency: refund it with refundFiat.`,
    );
  }
  if (facts.type === "fiat" && !isFiat(invoice.settlement)) {
    return err(
      "settlement_not_fiat",
      `The invoice settles in ${invoice.settlement.ticker}, not in a fiat currency: a fiat refund is not possible.`,
    );
  }
  if (facts.hasLiveRefund) {
    return err("refund_exists", "The invoice already has a refund that is processing or completed.");
  }
  if (invoice.status !== "completed") {
    return err("invoice_not_completed", `Only completed invoices can be refunded; this one is ${invoice.status}.`);
  }
  // paid_amount counts them, but the merchant is credited only once they settle: refunding now
  // would pay out money that may never arrive.
  if (invoice.unsettledPayments > 0) {
    return err(
      "payments_unsettled",
      "The invoice has payments that are not confirmed yet; refund it once they are confirmed.",
    );
  }
  let toAddress: string | null = null;
  if (destination?.kind === "sender") {
    if (invoice.soleSenderAddress === null) {
      return err(
        "sender_address_unavailable",
        "withdrawToSameAddress needs exactly one incoming transaction with a sender address; send an address instead.",
      );
    }
    toAddress = invoice.soleSenderAddress;
  } else if (destination?.kind === "address") {
    toAddress = destination.address;
  }

  const refunded = facts.type === "crypto" ? invoice.currency : invoice.settlement;
  const amountMinor = convertTo(invoice.paidMinor, invoice.currency, refunded);
  const debitMinor = convertTo(amountMinor, refunded, invoice.settlement);
  // A completed invoice was paid at least its merchant_receive_amount, which creation checked is
  // worth one minor unit of the settlement currency; conversion is monotonic.
  assert(amountMinor > 0n && debitMinor > 0n, "a completed invoice refunds a positive amount");
  return ok({
    type: facts.type,
    currency: refunded.ticker,
    amountMinor,
    toAddress,
    withdrawToSameAddress: destination?.kind === "sender",
    debit: { currency: invoice.settlement.ticker, amountMinor: debitMinor },
  });
}

/**
 * Where the payout of a fiat refund goes. The interface gives a fiat refund no destination: it
 * goes back to the invoice's payer through the payment rails (the card provider of a card payment),
 * which the payout processor (or, live, the operator) resolves from the invoice.
 */
export function fiatRefundDestination(invoiceId: string): string {
  return `invoice-payer:${invoiceId}`;
}

/** Why a crypto refund of an invoice paid on several networks is refused (docs/evm.md). */
export const SEVERAL_NETWORKS_DETAIL =
  "The invoice was paid on more than one network; a crypto refund goes out on one network, so it cannot return these payments: ask the operator.";

/**
 * The invoice's move after one of its refunds ended (its payout settled, or its claim expired),
 * or null when it stays (product §5, §25): out of `refund_processing` (its refunds reach what was
 * paid), back to `completed` when one failed, which makes room for a new refund, and to `refunded`
 * once every live refund completed. Any other status stays: a partly refunded invoice stays
 * `completed`, and a resolution refund (product §12) returns money of a failed or expired invoice.
 */
export function statusAfterRefund(
  status: InvoiceStatus,
  outcome: PayoutOutcome,
  allLiveRefundsCompleted: boolean,
): StatusChange | null {
  if (status !== "refund_processing") return null;
  if (outcome === "failed") return { to: "completed", cause: "refund_failed" };
  return allLiveRefundsCompleted ? { to: "refunded", cause: "refund_completed" } : null;
}
