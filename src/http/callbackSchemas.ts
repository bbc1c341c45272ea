// Schemas of the operator's view of callbacks: an event with its attempts, as the operator API answers it.
import { Type } from "typebox";
import type { CallbackEventWithAttempts } from "../store/callbacks.ts";
import { Nullable } from "./schemas.ts";

const DateTime = Type.String({ format: "date-time" });

export const CallbackAttemptSchema = Type.Object(
  {
    number: Type.Integer({
      minimum: 1,
      description: "1 for the first attempt of the event, counting every redelivery",
    }),
    startedAt: DateTime,
    durationMs: Type.Integer({ minimum: 0 }),
    statusCode: Nullable(Type.Integer({ description: "The merchant's HTTP status; null when none came" })),
    error: Nullable(
      Type.String({ description: "Timeout, refused connection, forbidden address, redirect not followed, …" }),
    ),
    responseBody: Nullable(
      Type.String({
        description:
          "The start of the merchant's answer (at most 2 KiB); null when none came, or when it came from a loopback or private address",
      }),
    ),
  },
  { additionalProperties: false },
);

export const CallbackEventSchema = Type.Object(
  {
    id: Type.String({ description: "The event id, sent as webhook-id and as the body's id" }),
    type: Type.String({
      description:
        "invoice.<status>, withdrawal.completed|failed, refund.completed|failed|claimed|expired or subscription.<event>",
    }),
    invoiceId: Nullable(
      Type.String({
        description: "The invoice of an invoice event; null for a withdrawal, refund or subscription event",
      }),
    ),
    merchantId: Type.String(),
    url: Type.String(),
    status: Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")]),
    createdAt: DateTime,
    nextAttemptAt: Nullable(DateTime),
    deliveredAt: Nullable(DateTime),
    attemptCount: Type.Integer({ minimum: 0 }),
    body: Type.String({ description: "The exact JSON text every attempt sends and signs" }),
    attempts: Type.Array(CallbackAttemptSchema),
  },
  { additionalProperties: false },
);

export function adminCallbackEvent(e: CallbackEventWithAttempts) {
  return {
    id: e.id,
    type: e.type,
    invoiceId: e.invoiceId,
    merchantId: e.merchantId,
    url: e.url,
    status: e.status,
    createdAt: e.createdAt,
    nextAttemptAt: e.nextAttemptAt,
    deliveredAt: e.deliveredAt,
    attemptCount: e.attemptCount,
    body: e.body,
    attempts: e.attempts,
  };
}
