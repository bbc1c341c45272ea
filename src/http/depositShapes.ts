// The shapes of customers' deposits (product §30) shared by the merchant API and the operator API.
import { Type } from "typebox";
import { Nullable } from "./schemas.ts";

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
  },
  { additionalProperties: false },
);
