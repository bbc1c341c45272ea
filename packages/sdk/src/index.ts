// The merchant payment service's TypeScript SDK: PaymentsClient, verifyCallback, errors and types.
export { type CallbackHeaders, type VerifyCallbackOptions, verifyCallback } from "./callbacks.ts";
export {
  type DepositAddressListParams,
  type DepositListParams,
  type EventListParams,
  type InvoiceListParams,
  type ListParams,
  type Page,
  PaymentsClient,
  type PaymentsClientOptions,
  type SignedOptions,
  type SubscriptionListParams,
} from "./client.ts";
export { CallbackVerificationError, PaymentsApiError, PaymentsConnectionError, type Problem } from "./errors.ts";
export type * from "./refundsAndLinks.ts";
export { canonicalBody, type SignatureInput, signRequest } from "./signing.ts";
export type * from "./types.ts";
