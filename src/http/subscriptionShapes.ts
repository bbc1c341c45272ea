// Request and response shapes of plans and subscriptions (product §29), shared by the public API, the sandbox's test clock and the dashboard.
import { Type } from "typebox";
import { MAX_INTERVAL_COUNT } from "../domain/subscriptions.ts";
import { HttpUrl, Nullable } from "./schemas.ts";

const Interval = Type.Union([Type.Literal("day"), Type.Literal("week"), Type.Literal("month"), Type.Literal("year")]);

const Days = (description: string, maximum: number) => Type.Integer({ minimum: 0, maximum, description });

export const PlanBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    currency: Type.String({ minLength: 1, maxLength: 20, description: "A ticker of the catalog" }),
    amount: Type.String({ minLength: 1, maxLength: 64, description: "The price of a period, a plain decimal string" }),
    interval: Interval,
    intervalCount: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_INTERVAL_COUNT.day,
        description: "Default 1; a period is at most a year",
      }),
    ),
    trialDays: Type.Optional(Days("Default 0", 730)),
    graceDays: Type.Optional(Days("Days an unpaid period's invoice stays open after the period starts; default 3", 14)),
    renewalNoticeDays: Type.Optional(
      Days("Days before a period ends that the next period's invoice is made; default 3", 14),
    ),
  },
  { additionalProperties: false },
);

export const Plan = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    currency: Type.String(),
    amount: Type.String(),
    interval: Interval,
    intervalCount: Type.Integer(),
    trialDays: Type.Integer(),
    graceDays: Type.Integer(),
    renewalNoticeDays: Type.Integer(),
    active: Type.Boolean({ description: "false: retired, takes no new subscriptions; its subscriptions continue" }),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

/** The statuses of SUBSCRIPTION_STATUSES (test/http checks they agree). */
export const SubscriptionStatusSchema = Type.Union([
  Type.Literal("incomplete"),
  Type.Literal("trialing"),
  Type.Literal("active"),
  Type.Literal("past_due"),
  Type.Literal("unpaid"),
  Type.Literal("canceled"),
]);

export const SubscriptionBody = Type.Object(
  {
    planId: Type.String({ minLength: 1, maxLength: 100 }),
    customer: Type.Object(
      {
        reference: Type.String({ minLength: 1, maxLength: 200, description: "Your reference of the customer" }),
        email: Type.Optional(Type.String({ minLength: 3, maxLength: 254, format: "email" })),
      },
      { additionalProperties: false },
    ),
    callbackUrl: Type.Optional(HttpUrl),
  },
  { additionalProperties: false },
);

const OpenInvoice = Type.Object(
  {
    id: Type.String(),
    url: Type.String({ description: "The payer's page of the invoice" }),
    status: Type.String(),
    amount: Type.String(),
    currency: Type.String(),
    period: Type.Integer({ description: "The period it pays" }),
    periodStart: Type.String({ format: "date-time" }),
    periodEnd: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

export const Subscription = Type.Object(
  {
    id: Type.String(),
    url: Type.String({ description: "The subscription's page for the payer, /s/{id}" }),
    planId: Type.String(),
    nextPlanId: Nullable(Type.String({ description: "The plan from the next period on, after a change" })),
    customer: Type.Object(
      { reference: Type.String(), email: Nullable(Type.String()) },
      { additionalProperties: false },
    ),
    callbackUrl: Nullable(Type.String()),
    status: SubscriptionStatusSchema,
    period: Type.Integer({ description: "The current period's number: 0 is the trial, 1 the first paid period" }),
    currentPeriodStart: Type.String({ format: "date-time" }),
    currentPeriodEnd: Type.String({ format: "date-time" }),
    trialEnd: Nullable(Type.String({ format: "date-time" })),
    cancelAtPeriodEnd: Type.Boolean(),
    canceledAt: Nullable(Type.String({ format: "date-time" })),
    openInvoice: Nullable(OpenInvoice),
    testClock: Nullable(
      Type.String({ format: "date-time", description: "Sandbox: the test clock's frozen time once advanced" }),
    ),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

export const SubscriptionIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
