// The card provider as the service needs it (product §20): checkout sessions, refunds, their fees and verified webhook events; adapters live in src/cardProvider/.
import type { BalanceTransaction } from "./cardFee.ts";
import { err, ok, type Result } from "./result.ts";

/** A hosted checkout for one invoice. */
export interface CheckoutRequest {
  invoiceId: string;
  /** The invoice's final_amount in the provider's minor units (see toProviderMinor). */
  amountMinor: bigint;
  /** ISO 4217 code, as the catalog's ticker. */
  currency: string;
  /** Shown to the payer on the provider's page. */
  label: string;
  /** Where the provider sends the payer back, paid or not: the payer's page. */
  returnUrl: string;
  /** When the provider stops taking this payment (ISO-8601). */
  expiresAt: string;
}

export interface CheckoutSession {
  sessionId: string;
  /** The provider's page where the payer pays. */
  url: string;
}

export interface CardRefundRequest {
  /** Our refund's request id: the provider's idempotency key, so a retry never makes a second refund. */
  refundRequestId: string;
  /** The provider's id of the payment being refunded. */
  paymentId: string;
  amountMinor: bigint;
}

export interface CardRefund {
  refundId: string;
  /** The provider's own status string (`pending`, `succeeded`, `failed`, `canceled`, …). */
  status: string;
}

/** What a refund status means for our refund: final outcomes, or still under way. */
export function refundOutcome(status: string): "completed" | "failed" | null {
  if (status === "succeeded") return "completed";
  if (status === "failed" || status === "canceled") return "failed";
  return null;
}

export type DisputeAction = "created" | "updated" | "closed";

/** A verified webhook event, reduced to what the service acts on. */
export type CardEvent =
  | {
      kind: "payment_succeeded";
      eventId: string;
      /** The checkout session that took it; null when the event names only the payment. */
      sessionId: string | null;
      /** Our invoice id as the payment's metadata carries it; null when absent. */
      invoiceId: string | null;
      /** The provider's payment id: the same payment under every event type that reports it. */
      paymentId: string;
      amountMinor: bigint;
      currency: string;
    }
  | {
      kind: "refund_updated";
      eventId: string;
      refundId: string;
      /** Our refund's request id from the refund's metadata; null when absent. */
      refundRequestId: string | null;
      /** The provider's id of the payment refunded; null when the event does not say. */
      paymentId: string | null;
      status: string;
    }
  | {
      kind: "dispute";
      eventId: string;
      action: DisputeAction;
      disputeId: string;
      paymentId: string;
      amountMinor: bigint;
      currency: string;
      /** The provider's dispute status (`needs_response`, `won`, `lost`, …). */
      status: string;
      reason: string;
    }
  | { kind: "ignored"; eventId: string; type: string };

/**
 * Why a verified event changed nothing: a type the service does not act on; a session or payment
 * of no checkout of ours; a PaymentIntent that is not the one our session reported; a refund of
 * no payout of ours, or of a payout not refunded through the card provider; a dispute of no card
 * payment of ours.
 */
export const CARD_EVENT_IGNORED_REASONS = [
  "event_type",
  "no_checkout",
  "payment_not_of_checkout",
  "refund_unknown",
  "refund_not_by_card_provider",
  "dispute_payment_unknown",
] as const;
export type CardEventIgnoredReason = (typeof CARD_EVENT_IGNORED_REASONS)[number];

export type CardProviderError = "provider_unavailable" | "provider_refused";

/**
 * The card provider behind fiat in live mode. Creating a checkout or a refund is idempotent at the
 * provider (keys given here), so calling again with the same key answers the same object.
 */
export interface CardProvider {
  /** `api_source` of invoices it takes. */
  readonly name: string;
  /** The origin of the provider's checkout pages (the payer's page lets its form lead there). */
  readonly checkoutOrigin: string;
  createCheckout(request: CheckoutRequest): Promise<Result<CheckoutSession, CardProviderError>>;
  createRefund(request: CardRefundRequest): Promise<Result<CardRefund, CardProviderError>>;
  /**
   * The balance transaction of a payment (by the provider's payment id) or of a refund (by its
   * refund id): what the provider kept as its fee. Null while the provider has none yet.
   */
  balanceTransaction(of: {
    source: "payment" | "refund";
    id: string;
  }): Promise<Result<BalanceTransaction | null, CardProviderError>>;
  /** Verifies a webhook's signature over its exact bytes and reads it; anything unverifiable is `invalid_signature`. */
  parseWebhook(rawBody: Buffer, signature: string | undefined): Result<CardEvent, "invalid_signature">;
}

/** Currencies the provider counts in whole units (no minor unit); every other one in hundredths. */
const ZERO_DECIMAL = new Set([
  "BIF",
  "CLP",
  "DJF",
  "GNF",
  "JPY",
  "KMF",
  "KRW",
  "MGA",
  "PYG",
  "RWF",
  "UGX",
  "VND",
  "VUV",
  "XAF",
  "XOF",
  "XPF",
]);

export function providerDecimals(currency: string): number {
  return ZERO_DECIMAL.has(currency.toUpperCase()) ? 0 : 2;
}

/** An amount of the catalog's minor units in the provider's; one the provider cannot express exactly is refused. */
export function toProviderMinor(
  amountMinor: bigint,
  decimals: number,
  currency: string,
): Result<bigint, "amount_not_representable"> {
  const theirs = providerDecimals(currency);
  if (decimals <= theirs) return ok(amountMinor * 10n ** BigInt(theirs - decimals));
  const factor = 10n ** BigInt(decimals - theirs);
  if (amountMinor % factor !== 0n) {
    return err("amount_not_representable", `${currency} amounts at the card provider have ${theirs} decimals`);
  }
  return ok(amountMinor / factor);
}

/** The provider's minor units in the catalog's; exact whenever the catalog has at least the provider's decimals. */
export function fromProviderMinor(
  amountMinor: bigint,
  decimals: number,
  currency: string,
): Result<bigint, "amount_not_representable"> {
  const theirs = providerDecimals(currency);
  if (decimals >= theirs) return ok(amountMinor * 10n ** BigInt(decimals - theirs));
  const factor = 10n ** BigInt(theirs - decimals);
  if (amountMinor % factor !== 0n) return err("amount_not_representable", `${currency} has ${decimals} decimals here`);
  return ok(amountMinor / factor);
}

/** The provider takes a checkout for 30 minutes to 24 hours: the invoice's expiry, within those bounds. */
export function checkoutExpiry(invoiceExpiresAt: string | null, now: Date): string {
  const min = now.getTime() + 31 * 60_000;
  const max = now.getTime() + 23 * 3_600_000;
  const wanted = invoiceExpiresAt === null ? max : Date.parse(invoiceExpiresAt);
  return new Date(Math.min(max, Math.max(min, wanted))).toISOString();
}
