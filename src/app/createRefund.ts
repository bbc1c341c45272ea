// Create a refund (RefundCrypto, RefundFiat and the dashboard's refund action): the body's shapes, and the acceptance inside the request id's transaction (the rules, the debit and payout, the refund row and the invoice's move to refund_processing).
import { Type } from "typebox";
import { checkEvmAddress } from "../domain/evmAddress.ts";
import type { RetryVerdict } from "../domain/idempotency.ts";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { publicRefundRequest } from "../domain/payoutRequests.ts";
import {
  type CryptoDestinationFields,
  fiatRefundDestination,
  planRefund,
  REFUND_REFUSAL_POINTER,
  type RefundRefusal,
  type RefundType,
  SEVERAL_NETWORKS_DETAIL,
} from "../domain/refund.ts";
import { assert, err, ok, type Result } from "../domain/result.ts";
import { applyTransition, lockInvoice } from "../store/invoices.ts";
import { findMerchant } from "../store/merchants.ts";
import { acceptPayout } from "../store/payouts.ts";
import {
  findInvoiceRefundView,
  hasLiveRefund,
  type InvoiceRefundView,
  insertRefund,
  refundInvoiceFacts,
} from "../store/refunds.ts";
import { refundEntryOf } from "../store/settlement.ts";
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

interface RefundRequest {
  /** Lowercased request id of the signed operation: the refund's id and its payout's. */
  requestKey: string;
  merchantId: string;
  type: RefundType;
  invoiceId: string;
  /** Crypto refunds: the destination fields of the body; null for fiat. */
  destination: CryptoDestinationFields | null;
  reason: string | null;
}

/**
 * Decides and performs a refund for the merchant. The invoice is locked first (lockInvoice), so
 * two refunds of one invoice take turns and the second sees the first; the unique index on live
 * refunds backs that up. A refusal may follow writes (the refund row, before the debit is refused),
 * so the caller must roll the transaction back: performRefund throws a Problem, which rolls back performOnce's transaction.
 */
async function acceptRefund(
  tx: Tx,
  request: RefundRequest,
  now: string,
  publicBaseUrl: string,
  /** What this service pays out by: the payout's rail is chosen from it (store/payouts.ts payoutRailFor). */
  railPolicy?: PayoutRailPolicy,
): Promise<Result<InvoiceRefundView, RefundRefusal | "insufficient_balance">> {
  const invoice = await lockInvoice(tx, request.invoiceId, request.merchantId);
  const merchant = await findMerchant(tx, request.merchantId);
  assert(merchant !== null, `the merchant of an API key exists (${request.merchantId})`);
  // A crypto refund goes out on the network the payment came on, from that entry's balance (product §23).
  const entry = invoice && request.type === "crypto" ? await refundEntryOf(tx, invoice) : null;
  const plan = planRefund({
    type: request.type,
    destination: request.destination,
    merchantStatus: merchant.status,
    invoice: invoice ? await refundInvoiceFacts(tx, invoice, entry === "several" ? null : entry) : null,
    hasLiveRefund: invoice ? await hasLiveRefund(tx, invoice.id) : false,
  });
  if (!plan.ok) return plan;
  assert(invoice !== null, "an accepted refund has its invoice");
  if (entry === "several") return err("payments_on_several_networks", SEVERAL_NETWORKS_DETAIL);
  const refund = plan.value;

  const recorded = await insertRefund(tx, {
    requestKey: request.requestKey,
    merchantId: request.merchantId,
    invoiceId: invoice.id,
    type: refund.type,
    currency: refund.currency,
    amountMinor: refund.amountMinor,
    debitCurrency: refund.debit.currency,
    debitMinor: refund.debit.amountMinor,
    toAddress: refund.toAddress,
    withdrawToSameAddress: refund.withdrawToSameAddress,
    reason: request.reason,
    createdAt: now,
  });
  // Unreachable while the invoice lock serializes refunds of one invoice; the index holds the rule regardless.
  if (!recorded) return err("refund_exists", "The invoice already has a refund that is processing or completed.");
  const accepted = await queueRefundPayout(tx, request, refund, invoice.id, now, railPolicy);
  if (!accepted.ok) {
    return err(
      "insufficient_balance",
      `The available ${refund.debit.currency} balance does not cover this refund; it debits the settlement currency.`,
    );
  }
  const moved = await applyTransition(tx, invoice, "refund_processing", "refund_accepted", now, publicBaseUrl);
  // The invoice is locked and was completed: the table allows completed -> refund_processing.
  assert(moved.ok, `invoice ${invoice.id} moves to refund_processing`);
  const view = await findInvoiceRefundView(tx, request.requestKey);
  assert(view !== null, "the refund was just inserted");
  return ok(view);
}

/** The refund's debit and its queued payout (to its address, or the fiat refund's own destination). */
function queueRefundPayout(
  tx: Tx,
  request: RefundRequest,
  refund: Extract<ReturnType<typeof planRefund>, { ok: true }>["value"],
  invoiceId: string,
  now: string,
  railPolicy: PayoutRailPolicy | undefined,
) {
  return acceptPayout(
    tx,
    {
      requestKey: request.requestKey,
      operation: "refund",
      merchantId: request.merchantId,
      cause: "refund",
      debit: { currency: refund.debit.currency, amount: refund.debit.amountMinor },
      payout: {
        currency: refund.currency,
        amount: refund.amountMinor,
        destination: refund.toAddress ?? fiatRefundDestination(invoiceId),
      },
      memo: `${refund.type} refund of invoice ${invoiceId}`,
      railPolicy,
    },
    now,
  );
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
