// Response and request shapes more than one HTTP surface answers with, defined once: payment links, withdrawal methods, team members, quote rates.
import { Type } from "typebox";
import type { DashboardUser } from "../store/dashboard.ts";
import { HttpUrl, Nullable } from "./schemas.ts";

const Money = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

export const PaymentLinkBody = Type.Object(
  {
    currency: Type.String({ minLength: 1, maxLength: 20, description: "A ticker of the catalog" }),
    amount: Type.Optional(Money("Fixed price, a plain decimal string")),
    minAmount: Type.Optional(Money("Lowest amount the payer may choose (with maxAmount)")),
    maxAmount: Type.Optional(Money("Highest amount the payer may choose (with minAmount)")),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    callbackUrl: Type.Optional(HttpUrl),
    successUrl: Type.Optional(HttpUrl),
    returnUrl: Type.Optional(HttpUrl),
    failUrl: Type.Optional(HttpUrl),
    active: Type.Optional(Type.Boolean({ description: "Default true" })),
  },
  { additionalProperties: false, description: "Either amount, or minAmount and maxAmount" },
);

export const PaymentLink = Type.Object(
  {
    id: Type.String(),
    url: Type.String({ description: "The payer's link, /l/{id}: one invoice per browser session, 303 to its page" }),
    currency: Type.String(),
    amount: Nullable(Type.String({ description: "Fixed price; null when the payer chooses" })),
    min_amount: Nullable(Type.String()),
    max_amount: Nullable(Type.String()),
    description: Nullable(Type.String()),
    callback_url: Nullable(Type.String()),
    success_url: Nullable(Type.String()),
    return_url: Nullable(Type.String()),
    fail_url: Nullable(Type.String()),
    active: Type.Boolean(),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

export const LinkInvoice = Type.Object(
  {
    id: Type.String(),
    status: Type.String(),
    currency: Type.String(),
    amount: Type.String(),
    created_at: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

export const WithdrawalMethodSchema = Type.Object(
  {
    id: Type.Integer(),
    merchantId: Type.String(),
    currency: Type.String({ description: "The ticker (shared by a currency's networks, product §23)" }),
    internalTicker: Type.String({
      description: "The catalog entry the method belongs to: debited and paid out on its network",
    }),
    network: Type.String(),
    address: Type.String(),
    label: Nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
    disabledAt: Nullable(Type.String({ format: "date-time", description: "Set once disabled: no new withdrawals" })),
    usableFrom: Nullable(
      Type.String({
        format: "date-time",
        description: "Takes withdrawals from this time (cooling-off); null: at once",
      }),
    ),
    addedBy: Type.Union([Type.Literal("operator"), Type.Literal("dashboard")]),
  },
  { additionalProperties: false },
);

/** A withdrawal method id in a path: a positive PostgreSQL integer. */
export const MethodIdParam = Type.String({ pattern: "^[1-9][0-9]{0,8}$" });

export const TeamMember = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    role: Type.String(),
    status: Type.Union([Type.Literal("active"), Type.Literal("invited")]),
    totpEnabled: Type.Boolean(),
    createdAt: Type.String(),
  },
  { additionalProperties: false },
);

export function teamMember(user: DashboardUser) {
  return {
    id: user.membershipId,
    email: user.email,
    role: user.role,
    status: user.accepted ? ("active" as const) : ("invited" as const),
    totpEnabled: user.totpEnabled,
    createdAt: user.createdAt,
  };
}

export const QuoteRateSchema = Type.Object(
  {
    currency: Type.String(),
    rate_usd: Type.String({ description: "USD per unit, with the source's precision" }),
    source: Type.Union([Type.Literal("static"), Type.Literal("chainlink")]),
    updated_at: Nullable(Type.String({ description: "The feed round's time; null for a static rate" })),
  },
  { additionalProperties: false },
);

/** A payment link's id in a path (the merchant API, the dashboard and the payer's link). */
export const PaymentLinkIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

/** The language a payer's page is asked in (`?lang=`); unknown ones fall back to the browser's. */
export const LangQuery = Type.Object({ lang: Type.Optional(Type.String({ maxLength: 20 })) });

/** A page of the audit logs (the dashboard's, and the operator's failed sign-ins): entries before an id, at most 100. */
export const BeforeLimitQuery = Type.Object(
  {
    before: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    limit: Type.Optional(Type.String({ pattern: "^(?:[1-9][0-9]?|100)$" })),
  },
  { additionalProperties: false },
);
