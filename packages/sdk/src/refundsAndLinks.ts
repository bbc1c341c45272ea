// Hand-written types of the refunds and payment links of product §25 (POST /public/v1/refunds/create, /public/v1/payment-links), until the generated types cover them.
import type { Invoice, RefundRequest } from "./types.ts";

/** The body of POST /public/v1/refunds/create: a crypto refund has exactly one destination, a fiat refund none. */
export interface CreateRefundParams {
  invoiceId: string;
  type: "crypto" | "fiat";
  /** Plain decimal string, at most what is still refundable (invoice currency; settlement currency for fiat). */
  amount: string;
  address?: string;
  withdrawToSameAddress?: boolean;
  /** true: debit now and get a claimUrl where the payer enters an address (valid 30 days). */
  claim?: boolean;
  /** Who bears the payout's network fee (the service's default: payer). */
  networkFeePaidBy?: "merchant" | "payer";
  reason?: string;
}

/** The answer of POST /public/v1/refunds/create. */
export interface CreatedRefund {
  request: RefundRequest;
  claimUrl: string | null;
  claimExpiresAt: string | null;
}

/** The body of POST /public/v1/payment-links: either amount, or minAmount and maxAmount. */
export interface CreatePaymentLinkParams {
  currency: string;
  amount?: string;
  minAmount?: string;
  maxAmount?: string;
  description?: string;
  callbackUrl?: string;
  successUrl?: string;
  returnUrl?: string;
  failUrl?: string;
  active?: boolean;
}

export interface PaymentLink {
  id: string;
  /** The payer's link, /l/{id}. */
  url: string;
  currency: string;
  amount: string | null;
  min_amount: string | null;
  max_amount: string | null;
  description: string | null;
  callback_url: string | null;
  success_url: string | null;
  return_url: string | null;
  fail_url: string | null;
  active: boolean;
  created_at: string;
  updated_at: string;
}

/** An invoice a payment link made (GET /public/v1/payment-links/{id}/invoices). */
export interface PaymentLinkInvoice {
  id: Invoice["id"];
  status: Invoice["status"];
  currency: string;
  amount: string;
  created_at: string;
}
