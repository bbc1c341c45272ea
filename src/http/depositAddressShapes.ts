// The shapes of customers' deposit addresses and their deposits (product §30), shared by the merchant API, the operator API and the dashboard's.
import { Type } from "typebox";
import { HttpUrl, Nullable } from "./schemas.ts";

export const DepositIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const DepositAddressBody = Type.Object(
  {
    customer: Type.String({
      minLength: 1,
      maxLength: 200,
      description: "The merchant's own reference of its customer",
    }),
    currency: Type.String({
      minLength: 1,
      maxLength: 40,
      description: "A ticker (or an internalTicker, naming its ticker)",
    }),
    callbackUrl: Type.Optional(HttpUrl),
  },
  { additionalProperties: false },
);

export const DepositAddress = Type.Object(
  {
    id: Type.String(),
    customer: Type.String(),
    currency: Type.String({ description: "The ticker: the address is the same on each of its networks" }),
    address: Type.String(),
    networks: Type.Array(Type.String(), { description: "The networks the currency can be deposited on now" }),
    active: Type.Boolean({ description: "false: later transfers are held for the merchant's decision" }),
    callbackUrl: Nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

const Amount = Nullable(Type.String());
/** The statuses of DEPOSIT_STATUSES (src/domain/depositAddresses.ts), listed for the schema's type. */
export const DepositStatusSchema = Type.Union([
  Type.Literal("pending"),
  Type.Literal("completed"),
  Type.Literal("aml_check"),
  Type.Literal("blocked"),
  Type.Literal("held"),
  Type.Literal("refunded"),
  Type.Literal("dust"),
  Type.Literal("reversed"),
]);
/** A deposit's refund's fields (DepositRefundObject, src/domain/depositAddresses.ts); the resolve that makes one adds claimUrl. */
export const depositRefundProperties = {
  id: Type.String({ description: "The refund's id (its payout's request id)" }),
  status: Type.Union(
    [
      Type.Literal("awaiting_claim"),
      Type.Literal("processing"),
      Type.Literal("completed"),
      Type.Literal("failed"),
      Type.Literal("expired"),
    ],
    {
      description:
        "awaiting_claim: the payer has not claimed it; processing: being paid out; completed: paid; failed (payout) or expired (claim): the deposit is held again",
    },
  ),
  amount: Type.String({ description: "What the payer receives: the deposit less the network fee" }),
  networkFee: Type.String({ description: "The network fee the payer bears" }),
  toAddress: Nullable(Type.String({ description: "The payer's address, once claimed" })),
  claimExpiresAt: Type.String({ format: "date-time", description: "Until when the payer can claim it" }),
  payoutProcessorStatus: Nullable(Type.String()),
  payoutProcessorTxId: Nullable(Type.String()),
  createdAt: Type.String({ format: "date-time" }),
};

export const DepositRefund = Type.Object(depositRefundProperties, {
  additionalProperties: false,
  description:
    "A held deposit's latest refund by claim link (product §30), whatever its end (a new one replaces it); null if never refunded. Its claim link is answered by the resolve only",
});

export const Deposit = Type.Object(
  {
    id: Type.String(),
    depositAddressId: Type.String(),
    customer: Type.String(),
    currency: Type.String(),
    entry: Type.String({
      description: "The catalog entry (internalTicker's key) it came in; amounts are in its units",
    }),
    network: Type.String(),
    address: Type.String(),
    txHash: Type.String(),
    logIndex: Nullable(Type.Integer()),
    fromAddress: Type.String(),
    amount: Type.String(),
    merchantFee: Amount,
    networkFee: Amount,
    creditedAmount: Type.Union([Type.String(), Type.Null()], {
      description: "Credited to the merchant; null until then",
    }),
    status: DepositStatusSchema,
    confirmed: Type.Boolean(),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
    refund: Nullable(DepositRefund),
  },
  { additionalProperties: false },
);

/** The merchant's decision on a deposit held at a deactivated address (POST /public/v1/deposits/{id}/resolve and the dashboard's). */
export const ResolveBody = Type.Object(
  {
    action: Type.Union([Type.Literal("credit"), Type.Literal("refund")], {
      description:
        "`credit`: the held deposit is credited from the hold with the fees of §4 (completed, deposit.completed); `refund`: it goes back to its payer by claim link, less the network fee (refunded; held again if the claim expires or the payout fails)",
    }),
  },
  { additionalProperties: false },
);

/** The deposit as it now is; for the action refund, its new refund adds the payer's claim link (answered here only). */
export const ResolvedDeposit = Type.Object(
  {
    ...Deposit.properties,
    refund: Nullable(
      Type.Object(
        {
          ...depositRefundProperties,
          claimUrl: Type.Optional(
            Type.String({
              description:
                "The action refund only: the payer's page /refund/{token}, where the payer enters an address; a bearer secret, never shown again",
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: "The deposit after the decision" },
);
