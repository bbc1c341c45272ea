// The Stripe adapter of the domain's CardProvider (product §20), on the official `stripe` package: checkout sessions, refunds, verified webhooks.
import Stripe from "stripe";
import type { CardProviderConfig } from "../config.ts";
import { STRIPE_DEFAULT_API_BASE } from "../config.ts";
import type { BalanceTransaction } from "../domain/cardFee.ts";
import type {
  CardEvent,
  CardProvider,
  CardProviderError,
  CardRefund,
  CardRefundRequest,
  CheckoutRequest,
  CheckoutSession,
  DisputeAction,
} from "../domain/cardProvider.ts";
import { err, ok, type Result } from "../domain/result.ts";

/** `api_source` of invoices paid through Stripe. */
export const STRIPE_PROVIDER = "stripe";

/**
 * Bound of one call to Stripe; the SDK retries network failures itself (safe: every write has an
 * idempotency key). Three attempts with their back-off stay under half the payout worker's lease
 * (30 s), its bound on a hand-over, and under the default request timeout of the payer's click.
 */
const REQUEST_TIMEOUT_MS = 8_000;
const MAX_NETWORK_RETRIES = 2;

/** Failures the provider may answer differently later (network, its own errors, rate limits) versus refusals. */
function providerError(error: unknown): CardProviderError {
  if (
    error instanceof Stripe.errors.StripeConnectionError ||
    error instanceof Stripe.errors.StripeAPIError ||
    error instanceof Stripe.errors.StripeRateLimitError
  ) {
    return "provider_unavailable";
  }
  if (error instanceof Stripe.errors.StripeError) return "provider_refused";
  return "provider_unavailable";
}

function idOf(value: string | { id: string } | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === "string" ? value : value.id;
}

function checkoutParams(request: CheckoutRequest): Stripe.Checkout.SessionCreateParams {
  return {
    mode: "payment",
    allowed_payment_method_types: ["card"],
    line_items: [
      {
        quantity: 1,
        price_data: {
          currency: request.currency.toLowerCase(),
          unit_amount: Number(request.amountMinor),
          product_data: { name: request.label },
        },
      },
    ],
    success_url: request.returnUrl,
    cancel_url: request.returnUrl,
    client_reference_id: request.invoiceId,
    metadata: { invoice_id: request.invoiceId },
    payment_intent_data: { metadata: { invoice_id: request.invoiceId } },
    expires_at: Math.floor(Date.parse(request.expiresAt) / 1000),
  };
}

/** A checkout's payment, from a session event: only a paid session reports money. */
function sessionPayment(eventId: string, session: Stripe.Checkout.Session): CardEvent {
  const paymentId = idOf(session.payment_intent);
  if (session.payment_status !== "paid" || paymentId === null || session.amount_total === null || !session.currency) {
    return { kind: "ignored", eventId, type: `checkout session ${session.payment_status}` };
  }
  return {
    kind: "payment_succeeded",
    eventId,
    sessionId: session.id,
    invoiceId: session.metadata?.invoice_id ?? session.client_reference_id ?? null,
    paymentId,
    amountMinor: BigInt(session.amount_total),
    currency: session.currency.toUpperCase(),
  };
}

function disputeEvent(eventId: string, action: DisputeAction, dispute: Stripe.Dispute): CardEvent {
  const paymentId = idOf(dispute.payment_intent);
  if (paymentId === null) return { kind: "ignored", eventId, type: "dispute without a payment intent" };
  return {
    kind: "dispute",
    eventId,
    action,
    disputeId: dispute.id,
    paymentId,
    amountMinor: BigInt(dispute.amount),
    currency: dispute.currency.toUpperCase(),
    status: dispute.status,
    reason: dispute.reason,
  };
}

/** Reads a verified Stripe event into what the service acts on; every other type is ignored. */
export function cardEventOf(event: Stripe.Event): CardEvent {
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded":
      return sessionPayment(event.id, event.data.object);
    case "payment_intent.succeeded": {
      const intent = event.data.object;
      return {
        kind: "payment_succeeded",
        eventId: event.id,
        sessionId: null,
        invoiceId: intent.metadata?.invoice_id ?? null,
        paymentId: intent.id,
        amountMinor: BigInt(intent.amount_received),
        currency: intent.currency.toUpperCase(),
      };
    }
    case "refund.created":
    case "refund.updated":
    case "refund.failed":
    case "charge.refund.updated": {
      const refund = event.data.object;
      return {
        kind: "refund_updated",
        eventId: event.id,
        refundId: refund.id,
        refundRequestId: refund.metadata?.refund_request_id ?? null,
        paymentId: idOf(refund.payment_intent),
        status: refund.status ?? "unknown",
      };
    }
    case "charge.dispute.created":
      return disputeEvent(event.id, "created", event.data.object);
    case "charge.dispute.updated":
      return disputeEvent(event.id, "updated", event.data.object);
    case "charge.dispute.closed":
      return disputeEvent(event.id, "closed", event.data.object);
    default:
      return { kind: "ignored", eventId: event.id, type: event.type };
  }
}

/** Stripe's balance transaction as the domain reads it; an id alone (not expanded) or none is not there yet. */
function balanceTransactionOf(value: string | Stripe.BalanceTransaction | null | undefined): BalanceTransaction | null {
  if (value === null || value === undefined || typeof value === "string") return null;
  return {
    id: value.id,
    type: value.type,
    currency: value.currency.toUpperCase(),
    amountMinor: BigInt(value.amount),
    feeMinor: BigInt(value.fee),
    netMinor: BigInt(value.net),
    feeDetails: value.fee_details.map((d) => ({
      type: d.type,
      amountMinor: BigInt(d.amount),
      currency: d.currency.toUpperCase(),
    })),
  };
}

/** A payment's balance transaction is its charge's: the PaymentIntent's latest charge, expanded in the same call. */
async function paymentBalanceTransaction(stripe: Stripe, paymentId: string): Promise<BalanceTransaction | null> {
  const intent = await stripe.paymentIntents.retrieve(paymentId, { expand: ["latest_charge.balance_transaction"] });
  const charge = intent.latest_charge;
  if (charge === null || typeof charge === "string") return null;
  return balanceTransactionOf(charge.balance_transaction);
}

async function refundBalanceTransaction(stripe: Stripe, refundId: string): Promise<BalanceTransaction | null> {
  const refund = await stripe.refunds.retrieve(refundId, { expand: ["balance_transaction"] });
  return balanceTransactionOf(refund.balance_transaction);
}

/** The origin of Stripe's hosted checkout: Stripe's own, or the API base's when a double or proxy stands in for it. */
function checkoutOrigin(apiBase: string): string {
  return apiBase === STRIPE_DEFAULT_API_BASE ? "https://checkout.stripe.com" : new URL(apiBase).origin;
}

export function stripeCardProvider(config: CardProviderConfig): CardProvider {
  const base = new URL(config.apiBase);
  const stripe = new Stripe(config.secretKey.reveal(), {
    host: base.hostname,
    port: base.port === "" ? (base.protocol === "https:" ? 443 : 80) : Number(base.port),
    protocol: base.protocol === "https:" ? "https" : "http",
    timeout: REQUEST_TIMEOUT_MS,
    maxNetworkRetries: MAX_NETWORK_RETRIES,
    telemetry: false,
  });
  const webhookSecret = config.webhookSecret.reveal();
  return {
    name: STRIPE_PROVIDER,
    checkoutOrigin: checkoutOrigin(config.apiBase),
    async createCheckout(request): Promise<Result<CheckoutSession, CardProviderError>> {
      try {
        // The invoice id is the idempotency key: a second call (a second click, another process)
        // with the same stored parameters answers the same session.
        const session = await stripe.checkout.sessions.create(checkoutParams(request), {
          idempotencyKey: request.invoiceId,
        });
        if (session.url === null) return err("provider_refused", "the checkout session has no URL");
        return ok({ sessionId: session.id, url: session.url });
      } catch (error) {
        return err(providerError(error), (error as Error).message);
      }
    },
    async createRefund(request: CardRefundRequest): Promise<Result<CardRefund, CardProviderError>> {
      try {
        const refund = await stripe.refunds.create(
          {
            payment_intent: request.paymentId,
            amount: Number(request.amountMinor),
            metadata: { refund_request_id: request.refundRequestId },
          },
          { idempotencyKey: request.refundRequestId },
        );
        return ok({ refundId: refund.id, status: refund.status ?? "pending" });
      } catch (error) {
        return err(providerError(error), (error as Error).message);
      }
    },
    async balanceTransaction(of): Promise<Result<BalanceTransaction | null, CardProviderError>> {
      try {
        return ok(
          of.source === "payment"
            ? await paymentBalanceTransaction(stripe, of.id)
            : await refundBalanceTransaction(stripe, of.id),
        );
      } catch (error) {
        return err(providerError(error), (error as Error).message);
      }
    },
    parseWebhook(rawBody, signature) {
      if (signature === undefined || signature === "") return err("invalid_signature", "no stripe-signature header");
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, signature, webhookSecret);
      } catch (error) {
        return err("invalid_signature", (error as Error).message);
      }
      return ok(cardEventOf(event));
    },
  };
}
