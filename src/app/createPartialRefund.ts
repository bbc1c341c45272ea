// Use case of POST /public/v1/refunds/create (product §25): a refund of part or all of what an invoice's payer paid, once per request id, to an address, the sender or a claim link.

import { randomBytes } from "node:crypto";
import { checkEvmAddress } from "../domain/evmAddress.ts";
import type { RetryVerdict } from "../domain/idempotency.ts";
import {
  type NetworkFeePayer,
  PARTIAL_REFUND_REFUSAL_POINTER,
  type PartialRefundDestinationFields,
  type PartialRefundPlan,
  type PartialRefundRefusal,
  planPartialRefund,
} from "../domain/partialRefund.ts";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { type PublicRefundRequestObject, publicRefundRequest } from "../domain/payoutRequests.ts";
import { fiatRefundDestination, type RefundType, SEVERAL_NETWORKS_DETAIL } from "../domain/refund.ts";
import { assert } from "../domain/result.ts";
import { applyTransition, type Invoice, incomingPaymentsSummary, lockInvoice } from "../store/invoices.ts";
import { findMerchant } from "../store/merchants.ts";
import { acceptPayout, type PayoutOrder, postPayoutDebit } from "../store/payouts.ts";
import { findInvoiceRefundView, insertRefund, liveRefundShares, refundInvoiceFacts } from "../store/refunds.ts";
import { refundEntryOf } from "../store/settlement.ts";
import type { Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { payoutRailPolicy } from "./payoutProcessors.ts";
import { type IdempotentRequest, performOnce } from "./performOnce.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";
import { type ScreeningRefusal, screenRefundDestination } from "./screenDestination.ts";

export const CREATE_REFUND_PATH = "/public/v1/refunds/create";

/** How long a claim link can be claimed (product §25). */
export const CLAIM_VALIDITY_MS = 30 * 24 * 60 * 60 * 1000;

export interface CreatePartialRefundInput {
  invoiceId: string;
  type: RefundType;
  amount: string;
  destination: PartialRefundDestinationFields;
  networkFeePaidBy: NetworkFeePayer;
  reason: string | null;
}

/** The answer: the refund object, and for a claim refund the payer's link and until when it can be claimed. */
export interface CreatedRefund {
  request: PublicRefundRequestObject;
  claimUrl: string | null;
  claimExpiresAt: string | null;
}

export type CreateRefundRefusal =
  | PartialRefundRefusal
  | "insufficient_balance"
  | "invalid_address"
  | ScreeningRefusal["code"];

export function claimUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/refund/${token}`;
}

/** Reads what the rules need about the locked invoice and decides (planPartialRefund); refuses on a failed rule. */
async function plan(tx: Tx, merchantId: string, invoice: Invoice | null, input: CreatePartialRefundInput) {
  const merchant = await findMerchant(tx, merchantId);
  assert(merchant !== null, `the merchant of an API key exists (${merchantId})`);
  // A crypto refund goes out on the network the payment came on, from that entry's balance (product §23).
  const entry = invoice && input.type === "crypto" ? await refundEntryOf(tx, invoice) : null;
  // The whole refund's facts (at the quote's rates), and the network fee of the refunded currency.
  const whole = invoice ? await refundInvoiceFacts(tx, invoice, entry === "several" ? null : entry) : null;
  const facts =
    whole === null
      ? null
      : {
          ...whole,
          refundNetworkFeeMinor: (input.type === "crypto" ? whole.currency : whole.settlement).networkFeeMinor,
        };
  const decided = planPartialRefund({
    type: input.type,
    destination: input.destination,
    amount: input.amount,
    networkFeePaidBy: input.networkFeePaidBy,
    merchantStatus: merchant.status,
    invoice: facts,
    taken: invoice ? await liveRefundShares(tx, invoice.id) : { takenMinor: 0n, whole: false },
  });
  if (!decided.ok) {
    const code = decided.error;
    return refuse(code, decided.detail ?? "The refund was refused.", PARTIAL_REFUND_REFUSAL_POINTER[code]);
  }
  if (entry === "several") {
    return refuse(
      "payments_on_several_networks",
      SEVERAL_NETWORKS_DETAIL,
      PARTIAL_REFUND_REFUSAL_POINTER.payments_on_several_networks,
    );
  }
  return decided.value;
}

function destinationAddress(decided: PartialRefundPlan, soleSender: string | null): string | null {
  switch (decided.destination.kind) {
    case "address":
      return decided.destination.address;
    case "sender":
      return soleSender;
    default:
      return null;
  }
}

/** The refund's debit and payout, as the payout repository takes them. */
function payoutOrderOf(
  request: IdempotentRequest,
  decided: PartialRefundPlan,
  invoiceId: string,
  toAddress: string | null,
  railPolicy: PayoutRailPolicy,
): PayoutOrder {
  return {
    requestKey: request.requestKey,
    operation: "refund",
    merchantId: request.merchantId,
    cause: "refund",
    debit: { currency: decided.debit.currency, amount: decided.debit.amountMinor },
    payout: {
      currency: decided.currency,
      amount: decided.payoutMinor,
      destination: toAddress ?? fiatRefundDestination(invoiceId),
    },
    networkFee: decided.networkFeeMinor,
    memo: `${decided.type} refund of ${decided.amountMinor} minor units of invoice ${invoiceId}`,
    railPolicy,
  };
}

/** The refund, its debit (and payout, unless the payer claims it) and the invoice's move once its refunds reach what was paid. */
async function accept(
  ctx: ServiceContext,
  tx: Tx,
  request: IdempotentRequest,
  input: CreatePartialRefundInput,
  now: string,
): Promise<CreatedRefund> {
  const invoice = await lockInvoice(tx, input.invoiceId, request.merchantId);
  const decided = await plan(tx, request.merchantId, invoice, input);
  assert(invoice !== null, "an accepted refund has its invoice");
  const toAddress = destinationAddress(decided, (await incomingPaymentsSummary(tx, invoice.id)).soleSenderAddress);
  if (ctx.config.serviceMode === "live" && toAddress !== null) {
    const checked = checkEvmAddress(toAddress);
    if (!checked.ok) refuse("invalid_address", `The refund address is not valid: ${checked.detail}.`, "/address");
  }
  await insertRefund(tx, {
    requestKey: request.requestKey,
    merchantId: request.merchantId,
    invoiceId: invoice.id,
    type: decided.type,
    currency: decided.currency,
    amountMinor: decided.amountMinor,
    debitCurrency: decided.debit.currency,
    debitMinor: decided.debit.amountMinor,
    toAddress,
    withdrawToSameAddress: decided.destination.kind === "sender",
    reason: input.reason,
    createdAt: now,
    partial: { paidShareMinor: decided.paidShareMinor, networkFeePaidBy: input.networkFeePaidBy },
  });
  const order = payoutOrderOf(request, decided, invoice.id, toAddress, payoutRailPolicy(ctx));
  const claim = decided.destination.kind === "claim";
  const debited = claim ? await postPayoutDebit(tx, order, now) : await acceptPayout(tx, order, now);
  if (!debited.ok) {
    refuse(
      "insufficient_balance",
      `The available ${decided.debit.currency} balance does not cover this refund; it debits the settlement currency.`,
      PARTIAL_REFUND_REFUSAL_POINTER.insufficient_balance,
    );
  }
  const claimLink = claim ? await openClaim(tx, request, now) : null;
  if (decided.exhausts) {
    const moved = await applyTransition(
      tx,
      invoice,
      "refund_processing",
      "refund_accepted",
      now,
      ctx.config.publicBaseUrl,
    );
    assert(moved.ok, `invoice ${invoice.id} moves to refund_processing`);
  }
  const view = await findInvoiceRefundView(tx, request.requestKey);
  assert(view !== null, "the refund was just inserted");
  return {
    request: publicRefundRequest(view),
    claimUrl: claimLink ? claimUrl(ctx.config.publicBaseUrl, claimLink.token) : null,
    claimExpiresAt: claimLink?.expiresAt ?? null,
  };
}

/** The claim of a refund its payer will direct: an unguessable token (256 random bits), open for 30 days. */
export async function openClaim(tx: Tx, request: Pick<IdempotentRequest, "requestKey" | "merchantId">, now: string) {
  const token = randomBytes(32).toString("base64url");
  const expiresAt = new Date(Date.parse(now) + CLAIM_VALIDITY_MS).toISOString();
  await tx.db
    .insertInto("refund_claims")
    .values({
      token,
      refund_id: request.requestKey,
      merchant_id: request.merchantId,
      status: "open",
      expires_at: expiresAt,
      address: null,
      claimed_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { token, expiresAt };
}

/**
 * Creates a refund once per request id: its destination screened first, outside any transaction
 * (product §21); then the request id, the rules, the refund, its debit and the recorded answer in
 * one transaction (performOnce). A refusal rolls everything back and records nothing, so the same
 * request id may be used again; a retry gets the recorded answer or a 409.
 */
export async function createPartialRefund(
  ctx: ServiceContext,
  request: IdempotentRequest,
  input: CreatePartialRefundInput,
): Promise<Outcome<RetryVerdict, CreateRefundRefusal>> {
  const screened = await screenRefundDestination(ctx, request.merchantId, input.invoiceId, input.destination);
  if (screened !== null) return { ok: false, refusal: screened };
  return withRefusals<RetryVerdict, CreateRefundRefusal>(() =>
    performOnce(ctx, request, (tx, idempotent, now) => accept(ctx, tx, idempotent, input, now)),
  );
}
