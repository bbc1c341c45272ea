// The public objects of the interface as TypeBox schemas, defined once: the domain's view types are their Static types, and the HTTP routes answer with them.
import { type Static, Type } from "typebox";
import { INVOICE_STATUSES } from "./invoiceStatus.ts";
import { MoneyString, Nullable } from "./shapes.ts";

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

const RequestStatus = Type.Union([Type.Literal("processing"), Type.Literal("completed"), Type.Literal("failed")]);

/** The asynchronous payout fields both request objects end with (interface: "the same asynchronous payout fields"). */
const PayoutFields = {
  status: RequestStatus,
  payout_processor_status: Nullable(Type.String()),
  payout_processor_tx_id: Nullable(Type.String()),
  created_at: Type.String({ format: "date-time" }),
  updated_at: Type.String({ format: "date-time" }),
};

export const PublicWithdrawalRequest = Type.Object(
  {
    id: Type.String({ description: "The request id of the signed CreateWithdrawal, as first accepted" }),
    currency: Type.String(),
    amount: Type.String({ description: "Plain decimal monetary string" }),
    withdrawal_method_id: Type.Integer(),
    ...PayoutFields,
  },
  { additionalProperties: false },
);

export const PublicRefundRequest = Type.Object(
  {
    id: Type.String({ description: "The request id of the signed RefundCrypto or RefundFiat, as first accepted" }),
    invoice_id: Type.String(),
    type: Type.Union([Type.Literal("crypto"), Type.Literal("fiat")]),
    currency: Type.String({ description: "Crypto: the invoice currency; fiat: the settlement currency" }),
    amount: Type.String({ description: "Plain decimal monetary string: paid_amount, converted for a fiat refund" }),
    to_address: Nullable(Type.String({ description: "Destination of a crypto refund; null for a fiat refund" })),
    withdraw_to_same_address: Type.Boolean(),
    ...PayoutFields,
  },
  { additionalProperties: false },
);

export type InvoiceView = Static<typeof InvoiceSchema>;
export type PublicWithdrawalRequestObject = Static<typeof PublicWithdrawalRequest>;
export type PublicRefundRequestObject = Static<typeof PublicRefundRequest>;
