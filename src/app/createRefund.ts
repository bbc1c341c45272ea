// Create a refund (RefundCrypto, RefundFiat and the dashboard's refund action): the body's shapes and the acceptance inside the request id's transaction.
import { Type } from "typebox";
import { checkEvmAddress } from "../domain/evmAddress.ts";
import type { RetryVerdict } from "../domain/idempotency.ts";
import { publicRefundRequest } from "../domain/payoutRequests.ts";
import {
  type CryptoDestinationFields,
  REFUND_REFUSAL_POINTER,
  type RefundRefusal,
  type RefundType,
} from "../domain/refund.ts";
import { acceptRefund } from "../store/refundAcceptance.ts";
import type { Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { payoutRailPolicy } from "./payoutProcessors.ts";
import { type IdempotentRequest, performOnceThen } from "./performOnce.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";
import { type ScreeningRefusal, screenRefundDestination } from "./screenDestination.ts";

/** Invoice ids are UUIDs; the bound only keeps arbitrary text out of queries (as GetInvoice's path parameter). */
export const InvoiceIdField = Type.String({ minLength: 1, maxLength: 500, description: "An invoice of your account" });

export const ReasonField = Type.String({
  maxLength: 1000,
  description: "Why the invoice is refunded; kept with the refund, not shown in its public object",
});

/** What RefundCrypto, RefundFiat and the dashboard's refund action refuse. */
export type RefundOnceRefusal = RefundRefusal | "insufficient_balance" | "invalid_address" | ScreeningRefusal["code"];

export interface RefundBodyFacts {
  type: RefundType;
  invoiceId: string;
  reason: string | undefined;
  /** Crypto: the body's destination fields; null for fiat. */
  destination: CryptoDestinationFields | null;
}

/**
 * Accepts a refund inside its request id's transaction (performOnce), for RefundCrypto, RefundFiat
 * and the dashboard's refund action alike: a refusal (`refuse`, 400) records nothing and an
 * acceptance is answered and replayed as recorded.
 */
export async function performRefund(
  ctx: ServiceContext,
  tx: Tx,
  idempotent: IdempotentRequest,
  facts: RefundBodyFacts,
  now: string,
): Promise<{ request: ReturnType<typeof publicRefundRequest> }> {
  const accepted = await acceptRefund(
    tx,
    {
      requestKey: idempotent.requestKey,
      merchantId: idempotent.merchantId,
      type: facts.type,
      invoiceId: facts.invoiceId,
      destination: facts.destination,
      reason: facts.reason ?? null,
    },
    now,
    ctx.config.publicBaseUrl,
    payoutRailPolicy(ctx),
  );
  if (!accepted.ok) {
    const detail = accepted.detail ?? "The refund was refused.";
    refuse(accepted.error, detail, REFUND_REFUSAL_POINTER[accepted.error]);
  }
  // Live money goes to the chain: the refund's address must be one (throwing rolls the acceptance back).
  if (ctx.config.serviceMode === "live" && accepted.value.toAddress !== null && facts.type === "crypto") {
    const checked = checkEvmAddress(accepted.value.toAddress);
    if (!checked.ok) {
      const detail = `The refund address is not valid: ${checked.detail}.`;
      refuse("invalid_address", detail, "/address", checked.detail ?? "is not a valid address");
    }
  }
  return { request: publicRefundRequest(accepted.value) };
}

/**
 * Refunds once per request id (RefundCrypto, RefundFiat and the dashboard's refund action): the
 * destination screened first, outside any transaction (product §21), then performRefund and
 * `alsoInTx` (the dashboard's audit record) in the request id's transaction (performOnce).
 */
export async function refundOnce(
  ctx: ServiceContext,
  idempotent: IdempotentRequest,
  facts: RefundBodyFacts,
  alsoInTx?: (tx: Tx, answer: Awaited<ReturnType<typeof performRefund>>) => Promise<unknown>,
): Promise<Outcome<RetryVerdict, RefundOnceRefusal>> {
  const screened = await screenRefundDestination(ctx, idempotent.merchantId, facts.invoiceId, facts.destination);
  if (screened !== null) return { ok: false, refusal: screened };
  const operate = (tx: Tx, r: IdempotentRequest, now: string) => performRefund(ctx, tx, r, facts, now);
  return withRefusals(() => performOnceThen(ctx, idempotent, operate, alsoInTx));
}

export const RefundCryptoBody = Type.Object(
  {
    invoiceId: InvoiceIdField,
    reason: Type.Optional(ReasonField),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Explicit destination address" })),
    withdrawToSameAddress: Type.Optional(
      Type.Boolean({ description: "true: refund to the sender address of the invoice's only incoming transaction" }),
    ),
  },
  {
    additionalProperties: false,
    description: "Exactly one destination: address, or withdrawToSameAddress: true.",
  },
);

export const RefundFiatBody = Type.Object(
  { invoiceId: InvoiceIdField, reason: Type.Optional(ReasonField) },
  { additionalProperties: false },
);
