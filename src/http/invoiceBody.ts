// The Invoice object of interface.md (PublicCreatedInvoiceResponse): its schema and how a stored invoice is answered.
import { type Static, Type } from "typebox";
import { INVOICE_STATUSES } from "../domain/invoiceStatus.ts";
import { formatAmount } from "../domain/money.ts";
import { summarizePayments } from "../domain/settlement.ts";
import type { LoadedInvoice } from "../store/invoices.ts";
import { MoneyString, Nullable } from "./schemas.ts";

const DateTime = Type.String({ format: "date-time", description: "RFC 3339, UTC, milliseconds" });

/** Exactly the 24 properties of the interface's table, nullable ones always present. */
export const InvoiceSchema = Type.Object(
  {
    id: Type.String({ description: "Invoice identifier" }),
    created_at: DateTime,
    updated_at: DateTime,
    expires_at: Nullable(DateTime),
    invoice_url: Type.String({ description: "The payer's hosted page" }),
    api_source: Nullable(Type.String({ description: "Card payment provider of a fiat invoice (`sandbox_card`)" })),
    type: Type.Union([Type.Literal("b2b"), Type.Literal("b2c")]),
    status: Type.Enum(INVOICE_STATUSES),
    merchant_id: Type.String(),
    settlement_currency: Nullable(Type.String()),
    currency: Nullable(Type.String()),
    convert_currency: Nullable(Type.String()),
    amount: MoneyString,
    final_amount: MoneyString,
    merchant_fee: MoneyString,
    network_and_other_fees: MoneyString,
    merchant_receive_amount: MoneyString,
    paid_amount: MoneyString,
    callback_url: Nullable(Type.String()),
    success_url: Nullable(Type.String()),
    return_url: Nullable(Type.String()),
    fail_url: Nullable(Type.String()),
    order_no: Nullable(Type.String({ description: "The merchant's own order reference" })),
    description: Nullable(Type.String()),
  },
  { additionalProperties: false, description: "PublicCreatedInvoiceResponse" },
);

export type InvoiceBody = Static<typeof InvoiceSchema>;

export function invoiceUrl(publicBaseUrl: string, invoiceId: string): string {
  return `${publicBaseUrl}/pay/${encodeURIComponent(invoiceId)}`;
}

/** A stored invoice as the interface answers it: monetary strings in the invoice currency, `paid_amount` from its payments. */
export function invoiceBody(loaded: LoadedInvoice, publicBaseUrl: string): InvoiceBody {
  const { invoice: i, decimals } = loaded;
  const money = (minor: bigint) => formatAmount(minor, decimals);
  return {
    id: i.id,
    created_at: i.createdAt,
    updated_at: i.updatedAt,
    expires_at: i.expiresAt,
    invoice_url: invoiceUrl(publicBaseUrl, i.id),
    api_source: i.apiSource,
    type: i.type,
    status: i.status,
    merchant_id: i.merchantId,
    settlement_currency: i.settlementCurrency,
    currency: i.currency,
    convert_currency: i.convertCurrency,
    amount: money(i.amountMinor),
    final_amount: money(i.finalAmountMinor),
    merchant_fee: money(i.merchantFeeMinor),
    network_and_other_fees: money(i.networkAndOtherFeesMinor),
    merchant_receive_amount: money(i.merchantReceiveAmountMinor),
    paid_amount: money(summarizePayments(loaded.payments).paidMinor),
    callback_url: i.callbackUrl,
    success_url: i.successUrl,
    return_url: i.returnUrl,
    fail_url: i.failUrl,
    order_no: i.orderNo,
    description: i.description,
  };
}

export const InvoiceIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) });
