// Names for the shapes of the merchant API, taken from the types generated from the service's OpenAPI document.
import type { operations } from "./generated/openapi.ts";

/** The JSON body an operation takes. */
export type RequestBody<Op extends keyof operations> = operations[Op] extends {
  requestBody?: { content: { "application/json": infer Body } };
}
  ? Body
  : never;

/** The JSON body an operation answers with 200. */
export type ResponseBody<Op extends keyof operations> = operations[Op] extends {
  responses: { 200: { content: { "application/json": infer Body } } };
}
  ? Body
  : never;

export type Currency = ResponseBody<"Currencies">[number];
export type Country = ResponseBody<"Countries">[number];
export type Merchant = ResponseBody<"Me">;
export type Invoice = ResponseBody<"GetInvoice">;
export type InvoiceStatus = Invoice["status"];
export type CreateInvoiceParams = RequestBody<"CreateInvoice">;
export type EstimateFeesParams = RequestBody<"EstimateFees">;
export type FeeEstimate = ResponseBody<"EstimateFees">;
export type CreateWithdrawalParams = RequestBody<"CreateWithdrawal">;
export type RefundCryptoParams = RequestBody<"RefundCrypto">;
export type RefundFiatParams = RequestBody<"RefundFiat">;
export type WithdrawalRequest = ResponseBody<"CreateWithdrawal">["request"];
export type RefundRequest = ResponseBody<"RefundCrypto">["request"];
/** One catalog entry's available balance of the merchant (GET /public/v1/balances). */
export type Balance = ResponseBody<"GetBalances">[number];
/** A plan (product §29): a price per period, with a trial and a grace. */
export type Plan = ResponseBody<"GetPlan">;
export type CreatePlanParams = RequestBody<"CreatePlan">;
/** A customer's subscription to a plan (product §29), with its open invoice. */
export type Subscription = ResponseBody<"GetSubscription">;
export type SubscriptionStatus = Subscription["status"];
export type CreateSubscriptionParams = RequestBody<"CreateSubscription">;
/** The events of a subscription's life; each carries the subscription as it then was. */
export type SubscriptionEventType =
  | "subscription.invoice_created"
  | "subscription.renewed"
  | "subscription.past_due"
  | "subscription.unpaid"
  | "subscription.canceled";
/** A customer's deposit address (product §30): the same address for the same customer and currency, on every network of the currency. */
export type DepositAddress = ResponseBody<"GetDepositAddress">;
export type CreateDepositAddressParams = RequestBody<"CreateDepositAddress">;
/** A transfer to a customer's deposit address, in the units of the catalog entry it came in (`entry`). */
export type Deposit = ResponseBody<"GetDeposit">;
export type DepositStatus = Deposit["status"];
/** A held deposit's refund's steps (`deposit.refund_<step>`, carrying the deposit with its `refund`). */
export type DepositRefundStep =
  | "completed"
  | "failed"
  | "claimed"
  | "expired"
  | "awaiting_approval"
  | "approved"
  | "rejected";
export type DepositEventType = "deposit.completed" | "deposit.reversed" | `deposit.refund_${DepositRefundStep}`;
export type { components, operations, paths } from "./generated/openapi.ts";

/**
 * An event as the service sends it to a callback URL (and, with the API extensions, lists it at
 * GET /public/v1/events): `{ type, id, created_at, data }`.
 */
export type PaymentsEvent =
  | { type: `invoice.${InvoiceStatus}`; id: string; created_at: string; data: { invoice: Invoice } }
  | {
      type: "withdrawal.completed" | "withdrawal.failed";
      id: string;
      created_at: string;
      data: { request: WithdrawalRequest };
    }
  | {
      type: "refund.completed" | "refund.failed" | "refund.claimed" | "refund.expired";
      id: string;
      created_at: string;
      data: { request: RefundRequest };
    }
  | { type: SubscriptionEventType; id: string; created_at: string; data: { subscription: Subscription } }
  | { type: DepositEventType; id: string; created_at: string; data: { deposit: Deposit } };
