// The payout policy as the operator API and the dashboard both answer it (product §31).
import { Type } from "typebox";
import { Nullable } from "./schemas.ts";

const PolicyLimits = {
  perPayoutLimit: Nullable(Type.String()),
  dailyLimit: Nullable(Type.String()),
  approvalsRequired: Type.Integer(),
};

export const PayoutPolicySchema = Type.Object(
  {
    currency: Type.String({ description: "The catalog entry (internal ticker)" }),
    ...PolicyLimits,
    pending: Nullable(
      Type.Object(
        { ...PolicyLimits, effectiveAt: Type.String({ description: "When this loosening takes effect" }) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, description: "The limits in force now, and a loosening in its cooling-off" },
);
