// A verified card provider webhook event applied once (product §20): a payment pays its invoice, a refund settles its payout, a dispute holds or releases money; the provider's fees are booked as the operator's.
import type { FastifyBaseLogger } from "fastify";
import type { CardFeeSource } from "../domain/cardFee.ts";
import {
  type CardEvent,
  type CardEventIgnoredReason,
  type CardProvider,
  fromProviderMinor,
  refundOutcome,
} from "../domain/cardProvider.ts";
import type { Currency } from "../domain/currencies.ts";
import {
  cappedDispute,
  disputeOutcome,
  type Hold,
  heldAmount,
  holdMovement,
  lossMovement,
  releaseMovement,
  splitHold,
} from "../domain/dispute.ts";
import type { Payout } from "../domain/payout.ts";
import { assert, err, ok, type Result } from "../domain/result.ts";
import {
  type CardCheckout,
  type CardDisputeRow,
  claimEvent,
  findCheckoutByInvoice,
  findCheckoutByPayment,
  findCheckoutBySession,
  findDispute,
  insertDispute,
  lockedAvailable,
  setCheckoutPayment,
  updateDispute,
} from "../store/cardPayments.ts";
import { findCurrency } from "../store/currencies.ts";
import { type Invoice, insertPayment, listPayments, lockInvoice, touchInvoice } from "../store/invoices.ts";
import { postMovement } from "../store/ledger.ts";
import { findPayout, settlePayout } from "../store/payouts.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { recordCardFee } from "./recordCardFee.ts";
import { recordPayment } from "./recordPayment.ts";
import { cardPaymentOfRefund } from "./refundByCard.ts";

/**
 * `applied`: the event changed what it reports. `duplicate`: this event id was applied before.
 * `ignored`: a type the service does not act on, or an event naming something of ours that the
 * service did not start through the card provider (a PaymentIntent that is not our session's, a
 * refund made on another rail). `unknown`: it names nothing of ours. Neither changes anything.
 */
export type EventOutcome = "applied" | "duplicate" | "ignored" | "unknown";

/** A payment or refund of ours the provider took a fee on: its fee is recorded after the event's transaction. */
type FeeOf = { source: CardFeeSource; id: string };

type Applied =
  | { outcome: "applied" | "duplicate"; note?: string; disputeAbovePayment?: true; feeOf?: FeeOf }
  | { outcome: "ignored" | "unknown"; reason: CardEventIgnoredReason; note: string };

async function catalog(tx: Tx, ticker: string): Promise<Currency> {
  const currency = await findCurrency(tx, ticker);
  assert(currency !== null, `currency ${ticker} of an invoice is in the catalog`);
  return currency;
}

/** Claims the event in the transaction that applies it; a second delivery finds it claimed. */
async function once(tx: Tx, provider: CardProvider, event: CardEvent, outcome: string): Promise<boolean> {
  return claimEvent(tx, { eventId: event.eventId, provider: provider.name, kind: event.kind, outcome }, nowIso());
}

type PaymentEvent = Extract<CardEvent, { kind: "payment_succeeded" }>;

/**
 * The checkout a payment event pays: a session event's own session, or for an event that names
 * only the payment (`payment_intent.succeeded`), the checkout whose session reported that payment.
 * A PaymentIntent names no session and anyone with access to the provider account can write an
 * invoice id in its metadata, so one our session did not report pays nothing, whatever it names.
 */
async function checkoutOfPayment(tx: Tx, event: PaymentEvent): Promise<CardCheckout | Applied> {
  const checkout =
    event.sessionId !== null
      ? await findCheckoutBySession(tx, event.sessionId)
      : await findCheckoutByPayment(tx, event.paymentId);
  if (checkout && (event.invoiceId === null || event.invoiceId === checkout.invoice_id)) return checkout;
  if (event.sessionId === null && event.invoiceId !== null && (await findCheckoutByInvoice(tx, event.invoiceId))) {
    return {
      outcome: "ignored",
      reason: "payment_not_of_checkout",
      note: `payment ${event.paymentId} names invoice ${event.invoiceId} but is not the payment of its checkout session`,
    };
  }
  return { outcome: "unknown", reason: "no_checkout", note: "no checkout of ours has this session or payment" };
}

/**
 * A payment pays the invoice of its checkout through the same rules as every payment (§5), keyed
 * by the provider's payment id: the session's completion and the payment's success are one payment.
 * A payment for an invoice that no longer takes one (expired meanwhile) is recorded as late and shown.
 */
async function applyPayment(
  ctx: ServiceContext,
  tx: Tx,
  provider: CardProvider,
  event: PaymentEvent,
): Promise<Applied> {
  const checkout = await checkoutOfPayment(tx, event);
  if (!("invoice_id" in checkout)) return checkout;
  const feeOf: FeeOf = { source: "payment", id: event.paymentId };
  if (!(await once(tx, provider, event, "payment"))) {
    // A redelivery still records the fee a failed first attempt could not (the ledger posts it once).
    return checkout.payment_id === event.paymentId ? { outcome: "duplicate", feeOf } : { outcome: "duplicate" };
  }
  const invoice = await lockInvoice(tx, checkout.invoice_id);
  assert(invoice !== null, `checkout ${checkout.invoice_id} has its invoice`);
  const currency = await catalog(tx, invoice.currency);
  const amount = fromProviderMinor(event.amountMinor, currency.decimals, currency.ticker);
  if (event.currency !== currency.ticker || !amount.ok) {
    return {
      outcome: "applied",
      note: `payment in ${event.currency} does not fit invoice ${invoice.id}: not recorded`,
    };
  }
  const now = nowIso();
  await setCheckoutPayment(tx, invoice.id, event.paymentId, now);
  const recorded = await recordPayment(
    tx,
    invoice,
    { txId: event.paymentId, amountMinor: amount.value, confirmed: true, provider: provider.name },
    now,
    ctx.config.publicBaseUrl,
  );
  // The provider took its fee whatever the invoice made of the payment: a late one costs it too.
  if (recorded.ok) return { outcome: "applied", feeOf };
  if (recorded.error !== "invoice_not_payable") {
    return { outcome: "applied", note: `payment ${event.paymentId} not recorded: ${recorded.error}`, feeOf };
  }
  await recordLatePayment(tx, invoice, event.paymentId, amount.value, provider.name, now);
  return {
    outcome: "applied",
    note: `invoice ${invoice.id} no longer takes payments: recorded as late, refund it`,
    feeOf,
  };
}

async function recordLatePayment(
  tx: Tx,
  invoice: Invoice,
  paymentId: string,
  amountMinor: bigint,
  provider: string,
  now: string,
): Promise<void> {
  const payments = await listPayments(tx, invoice.id);
  if (payments.some((p) => p.txId === paymentId)) return;
  await insertPayment(
    tx,
    {
      invoiceId: invoice.id,
      txId: paymentId,
      amountMinor,
      fromAddress: null,
      confirmed: true,
      amlStatus: "none",
      provider,
      late: true,
    },
    now,
  );
  await touchInvoice(tx, invoice.id, now);
}

type RefundEvent = Extract<CardEvent, { kind: "refund_updated" }>;

/**
 * The refund payout a refund event reports: ours by its metadata or by the provider's refund id,
 * on the card rail, and for the card payment ours returns. Anything else changes nothing.
 */
async function cardRefundOf(tx: Tx, event: RefundEvent): Promise<Payout | Applied> {
  let requestKey = event.refundRequestId?.toLowerCase() ?? null;
  if (requestKey === null) {
    const row = await tx.db
      .selectFrom("payouts")
      .select("request_id")
      .where("processor_tx_id", "=", event.refundId)
      .executeTakeFirst();
    requestKey = row?.request_id ?? null;
  }
  const payout = requestKey === null ? null : await findPayout(tx, requestKey);
  if (payout?.operation !== "refund") {
    return { outcome: "unknown", reason: "refund_unknown", note: `no refund of ours is refund ${event.refundId}` };
  }
  // Only a refund the card processor handed to the provider is the provider's to settle: a crypto
  // refund's request id or transaction hash in a card refund event changes nothing.
  if (payout.rail !== "card") {
    return {
      outcome: "ignored",
      reason: "refund_not_by_card_provider",
      note: `refund ${payout.requestKey} is on the ${payout.rail ?? "unassigned"} rail, not the card provider's`,
    };
  }
  if (payout.processorTxId !== null && payout.processorTxId !== event.refundId) {
    return { outcome: "unknown", reason: "refund_unknown", note: `no refund of ours is refund ${event.refundId}` };
  }
  // Before the hand-over recorded the provider's refund id, the refund must at least be of the card payment ours returns.
  const card = event.paymentId === null ? null : await cardPaymentOfRefund(tx, payout);
  if (card !== null && card.paymentId !== event.paymentId) {
    return {
      outcome: "ignored",
      reason: "refund_not_by_card_provider",
      note: `refund ${event.refundId} is of payment ${event.paymentId}, not of refund ${payout.requestKey}'s payment`,
    };
  }
  return payout;
}

/** A refund's status reaches its payout: a final one settles it (completed, or failed with the debit credited back). */
async function applyRefund(ctx: ServiceContext, tx: Tx, provider: CardProvider, event: RefundEvent): Promise<Applied> {
  const payout = await cardRefundOf(tx, event);
  if ("outcome" in payout) return payout;
  const outcome = refundOutcome(event.status);
  // A refund that went through has its own balance transaction; the provider keeps the payment's
  // fee, so it usually says 0, and whatever it says is booked.
  const feeOf: FeeOf | undefined = outcome === "completed" ? { source: "refund", id: event.refundId } : undefined;
  if (!(await once(tx, provider, event, event.status))) return { outcome: "duplicate", ...(feeOf && { feeOf }) };
  const now = nowIso();
  if (outcome === null) {
    await tx.db
      .updateTable("payouts")
      .set({ processor_status: event.status, processor_tx_id: event.refundId, updated_at: now })
      .where("request_id", "=", payout.requestKey)
      .where("state", "in", ["sending", "sent"])
      .execute();
    return { outcome: "applied" };
  }
  const settled = await settlePayout(
    tx,
    payout.requestKey,
    { outcome, processorStatus: event.status, processorTxId: event.refundId },
    now,
    ctx.config.publicBaseUrl,
  );
  if (!settled.ok)
    return { outcome: "applied", note: `refund ${payout.requestKey}: ${settled.error}`, ...(feeOf && { feeOf }) };
  return { outcome: "applied", ...(feeOf && { feeOf }) };
}

type DisputeEvent = Extract<CardEvent, { kind: "dispute" }>;

function holdOf(row: CardDisputeRow): Hold {
  return {
    disputeId: row.dispute_id,
    merchantId: row.merchant_id,
    currency: row.hold_currency,
    heldMinor: BigInt(row.held_amount),
    receivableMinor: BigInt(row.receivable_amount),
  };
}

/** Posts a dispute movement; one already posted (the ledger keys it by dispute and kind) is done. */
async function post(tx: Tx, movement: ReturnType<typeof holdMovement>, now: string): Promise<void> {
  const posted = await postMovement(tx, movement, now);
  assert(
    posted.ok || posted.error === "already_posted",
    `dispute movement ${movement.kind} posts (${!posted.ok && posted.error})`,
  );
}

/** A dispute opened: recorded on the invoice, its amount held out of the available balance (the rest a receivable). */
async function openDispute(
  tx: Tx,
  invoice: Invoice,
  event: DisputeEvent,
  now: string,
): Promise<CardDisputeRow | string> {
  const currency = await catalog(tx, invoice.currency);
  const settlement = await catalog(tx, invoice.settlementCurrency);
  const disputed = fromProviderMinor(event.amountMinor, currency.decimals, currency.ticker);
  if (event.currency !== currency.ticker || !disputed.ok)
    return `dispute in ${event.currency} does not fit invoice ${invoice.id}`;
  const payment = (await listPayments(tx, invoice.id)).find((p) => p.txId === event.paymentId);
  const capped = cappedDispute(disputed.value, payment?.amountMinor ?? 0n);
  const held = heldAmount(capped.amountMinor, currency, settlement);
  const split = splitHold(held, await lockedAvailable(tx, invoice.merchantId, settlement.ticker));
  const row: CardDisputeRow = {
    dispute_id: event.disputeId,
    invoice_id: invoice.id,
    merchant_id: invoice.merchantId,
    payment_id: event.paymentId,
    currency: currency.ticker,
    amount: capped.amountMinor.toString(),
    provider_amount: capped.aboveThePayment ? disputed.value.toString() : null,
    hold_currency: settlement.ticker,
    held_amount: held.toString(),
    receivable_amount: split.receivableMinor.toString(),
    status: event.status,
    reason: event.reason,
    outcome: null,
    created_at: now,
    updated_at: now,
  };
  await insertDispute(tx, row);
  if (held > 0n) await post(tx, holdMovement(holdOf(row)), now);
  return row;
}

/**
 * Disputes arrive as created, updated and closed, possibly out of order: the first seen opens it
 * (with its hold), `closed` settles it once (won: the hold back; lost: to the payer), and nothing
 * after closing changes it.
 */
async function applyDispute(tx: Tx, provider: CardProvider, event: DisputeEvent): Promise<Applied> {
  const checkout = await findCheckoutByPayment(tx, event.paymentId);
  if (!checkout) {
    return {
      outcome: "unknown",
      reason: "dispute_payment_unknown",
      note: `no card payment of ours is ${event.paymentId}`,
    };
  }
  if (!(await once(tx, provider, event, `dispute_${event.action}`))) return { outcome: "duplicate" };
  const invoice = await lockInvoice(tx, checkout.invoice_id);
  assert(invoice !== null, `checkout ${checkout.invoice_id} has its invoice`);
  const now = nowIso();
  let row = await findDispute(tx, event.disputeId);
  let applied: Applied = { outcome: "applied" };
  if (row === null) {
    const opened = await openDispute(tx, invoice, event, now);
    if (typeof opened === "string") return { outcome: "applied", note: opened };
    row = opened;
    if (row.provider_amount !== null) {
      applied = {
        outcome: "applied",
        note: `dispute ${row.dispute_id} is for more than its payment ${row.payment_id}: capped at the payment, flagged for the operator`,
        disputeAbovePayment: true,
      };
    }
  }
  if (row.outcome !== null) return { outcome: "applied", note: `dispute ${row.dispute_id} already closed` };
  if (event.action !== "closed") {
    await updateDispute(tx, row.dispute_id, { status: event.status, reason: event.reason, outcome: null }, now);
    await touchInvoice(tx, invoice.id, now);
    return applied;
  }
  const outcome = disputeOutcome(event.status);
  const hold = holdOf(row);
  if (hold.heldMinor > 0n) {
    const currency = await catalog(tx, row.currency);
    await post(tx, outcome === "won" ? releaseMovement(hold) : lossMovement(hold, BigInt(row.amount), currency), now);
  }
  await updateDispute(tx, row.dispute_id, { status: event.status, reason: event.reason, outcome }, now);
  await touchInvoice(tx, invoice.id, now);
  return applied;
}

/**
 * Books the fee of the payment or refund an event applied, after its transaction: the provider is
 * asked outside any transaction. When the provider cannot tell yet (no answer, no balance
 * transaction yet) the event is answered as unavailable, so the provider delivers it again; a
 * refusal (the key may not read it) or a balance transaction that does not add up would be the same
 * on every delivery: logged as an error for the operator, and not booked.
 */
async function bookFee(
  ctx: ServiceContext,
  provider: CardProvider,
  event: CardEvent,
  feeOf: FeeOf,
  log: FastifyBaseLogger,
): Promise<Result<void, "card_provider_unavailable">> {
  const fee = await recordCardFee(ctx, provider, feeOf);
  if (fee.ok) return ok(undefined);
  const fields = { eventId: event.eventId, ...feeOf, reason: fee.error, detail: fee.detail };
  if (fee.error === "inconsistent_fee" || fee.error === "provider_refused") {
    log.error(fields, "card provider fee not booked: the provider refused to show it, or its figures do not add up");
    return ok(undefined);
  }
  log.warn(fields, "card provider fee not known yet: the event is to be delivered again");
  return err("card_provider_unavailable", fee.detail);
}

/**
 * Applies one verified event in one transaction, once per event id; what names nothing of ours is
 * logged and changes nothing. A payment's or refund's fee is then booked; when it cannot be yet the
 * answer is `card_provider_unavailable` (the event's own change stays, a redelivery books the fee).
 */
export async function applyCardProviderEvent(
  ctx: ServiceContext,
  provider: CardProvider,
  event: CardEvent,
  log: FastifyBaseLogger,
): Promise<Result<EventOutcome, "card_provider_unavailable">> {
  if (event.kind === "ignored") {
    ctx.metrics.cardEventsIgnored.inc({ reason: "event_type" });
    return ok("ignored");
  }
  const applied = await ctx.store.transaction(async (tx): Promise<Applied> => {
    switch (event.kind) {
      case "payment_succeeded":
        return applyPayment(ctx, tx, provider, event);
      case "refund_updated":
        return applyRefund(ctx, tx, provider, event);
      case "dispute":
        return applyDispute(tx, provider, event);
    }
  });
  if ("reason" in applied) {
    ctx.metrics.cardEventsIgnored.inc({ reason: applied.reason });
    log.warn(
      { eventId: event.eventId, kind: event.kind, reason: applied.reason, note: applied.note },
      "card provider event changes nothing of ours: ignored",
    );
    return ok(applied.outcome);
  }
  if (applied.disputeAbovePayment) ctx.metrics.cardDisputesAbovePayment.inc();
  if (applied.note !== undefined) {
    log.warn({ eventId: event.eventId, kind: event.kind, note: applied.note }, "card provider event needs attention");
  }
  if (applied.feeOf !== undefined) {
    const booked = await bookFee(ctx, provider, event, applied.feeOf, log);
    if (!booked.ok) return booked;
  }
  return ok(applied.outcome);
}
