// Settlement of invoices inside one transaction: an incoming payment, a screening decision, expiry, and the completion credit (once).
import { type Currency, inUnitsOf } from "../domain/currencies.ts";
import { isPayable } from "../domain/invoiceStatus.ts";
import { type ChainPaymentPlace, invoiceView } from "../domain/invoices.ts";
import type { Movement } from "../domain/ledger.ts";
import { atQuotedRate, type PaymentValue, paymentValue } from "../domain/rates.ts";
import { assert, assertOk, err, ok, type Result } from "../domain/result.ts";
import type { ScreeningReason } from "../domain/screening.ts";
import {
  type AmlDecision,
  type AmlStatus,
  amlStatusAfter,
  amountDue,
  blockedPaymentMovement,
  completionMovement,
  type EntryShare,
  latePaymentMovement,
  onTimePayments,
  type StatusChange,
  splitCompletionMovement,
  statusAfterAml,
  statusAfterPayments,
  statusAtExpiry,
  summarizePayments,
} from "../domain/settlement.ts";
import { entriesOf, findCurrency } from "./currencies.ts";
import { recordInvoiceEvent } from "./events.ts";
import {
  applyTransition,
  claimDueInvoices,
  confirmPayment,
  deferExpiry,
  type IncomingPayment,
  type Invoice,
  insertPayment,
  linkInvoiceIds,
  listPayments,
  markScreened,
  paymentsOf,
  setPaymentAmlStatus,
  setStatus,
  type TransitionError,
  touchInvoice,
} from "./invoices.ts";
import { postMovement } from "./ledger.ts";
import { liveRate } from "./rateReadings.ts";
import type { Store, Tx } from "./store.ts";

/** An incoming payment as a payment source reports it; fields left undefined were not stated. */
export interface PaymentEvent {
  txId: string;
  /** Minor units of the invoice currency; undefined means "what is still due". */
  amountMinor?: bigint;
  fromAddress?: string | null;
  confirmed?: boolean;
  amlFlag?: boolean;
  /** The sender waits for screening (product §21): the payment settles nothing until it is screened. */
  unscreened?: boolean;
  /** Card payment provider for fiat invoices; null for on-chain payments. */
  provider: string | null;
  /** When the payment happened (a chain payment: its block's time); the expiry check uses it. Default: now. */
  arrivedAt?: string;
  /** A live chain payment's place (product §12). */
  chain?: ChainPaymentPlace;
}

export type PaymentError = "invoice_not_payable" | "payment_conflict" | "nothing_due" | TransitionError;

/**
 * The invoice's payment and settlement currencies, from the catalog, at the rates its quote fixed
 * at creation (product §22): whatever the feeds say now, an invoice converts at its own rates.
 */
export async function invoiceCurrencies(tx: Tx, invoice: Invoice) {
  const currency = await findCurrency(tx, invoice.currency);
  const settlement =
    invoice.settlementCurrency === invoice.currency ? currency : await findCurrency(tx, invoice.settlementCurrency);
  assert(currency && settlement, `invoice ${invoice.id} has catalog currencies`);
  const rates = invoice.quoteRates ?? null;
  return { currency: atQuotedRate(currency, rates), settlement: atQuotedRate(settlement, rates) };
}

/** A payment's USD value as it is confirmed: at the invoice's fixed rate, and at the live rate beside it. */
async function valueAtConfirmation(tx: Tx, invoice: Invoice, amountMinor: bigint, now: string): Promise<PaymentValue> {
  const catalog = await findCurrency(tx, invoice.currency);
  assert(catalog, `invoice ${invoice.id} has a catalog currency`);
  const fixed = atQuotedRate(catalog, invoice.quoteRates ?? null).rateUsd;
  return paymentValue(amountMinor, catalog.decimals, fixed, await liveRate(tx, catalog, Date.parse(now)));
}

/** Posts an invoice credit; a credit to a merchant cannot be refused, and one already posted is done. */
async function postCredit(tx: Tx, credit: Movement, now: string): Promise<void> {
  const posted = await postMovement(tx, credit, now);
  if (!posted.ok && posted.error !== "already_posted") assertOk(posted, "an invoice credit cannot be refused");
}

/**
 * Credits a completed invoice to its merchant: `merchant_receive_amount` plus any overpayment, in
 * the settlement currency. The ledger keys the movement (invoice, id, completion), so a second
 * call, from a duplicate event or another process, posts nothing.
 */
export async function creditCompletion(tx: Tx, invoice: Invoice, payments: readonly IncomingPayment[], now: string) {
  const { currency, settlement } = await invoiceCurrencies(tx, invoice);
  const counted = onTimePayments(payments);
  const input = {
    invoiceId: invoice.id,
    merchantId: invoice.merchantId,
    currency,
    settlement,
    finalAmountMinor: invoice.finalAmountMinor,
    merchantFeeMinor: invoice.merchantFeeMinor,
    networkAndOtherFeesMinor: invoice.networkAndOtherFeesMinor,
    merchantReceiveAmountMinor: invoice.merchantReceiveAmountMinor,
    settledMinor: summarizePayments(counted).settledMinor,
  };
  const shares = settlement.ticker === currency.ticker ? await entryShares(tx, invoice, counted) : null;
  const completion =
    shares === null ? completionMovement(input) : splitCompletionMovement(input, shares, currency.decimals);
  await postCredit(tx, completion.movement, now);
  return completion;
}

/**
 * The settled payments per catalog entry of the invoice currency, by the network each came on
 * (product §23); null when they all are the invoice currency's first entry (the usual case).
 */
export async function entryShares(
  tx: Tx,
  invoice: Invoice,
  payments: readonly IncomingPayment[],
): Promise<EntryShare[] | null> {
  const networks = new Set(payments.map((p) => p.chain?.network).filter((n) => n !== undefined));
  if (networks.size === 0) return null;
  const entries = await entriesOf(tx, invoice.currency);
  const byKey = new Map<string, EntryShare>();
  const settled = summarizeSettledByNetwork(payments);
  for (const [network, settledMinor] of settled) {
    const entry =
      network === null
        ? undefined
        : entries.find((e) => e.network === network && (invoice.currencyEntry ?? e.ticker) === e.ticker);
    const key = entry?.ticker ?? invoice.currency;
    const known = byKey.get(key);
    byKey.set(key, {
      entry: entry ?? { ticker: invoice.currency, decimals: entries[0]?.decimals ?? 0 },
      settledMinor: (known?.settledMinor ?? 0n) + settledMinor,
    });
  }
  if (byKey.size === 1 && byKey.has(invoice.currency)) return null;
  return [...byKey.values()];
}

/**
 * The catalog entry money of `payments` goes back out in (product §23: on the network the payment
 * came on): the entry they all came in on, when that is not the invoice currency's first entry
 * (its amounts are then rescaled to the entry's units by the caller, inUnitsOf); null otherwise
 * (the first entry); "several" when they came in on more than one entry (refunds refuse those,
 * docs/evm.md "Refunds of payments on several networks").
 */
export async function entryOfPayments(
  tx: Tx,
  invoice: Invoice,
  payments: readonly IncomingPayment[],
): Promise<Currency | null | "several"> {
  const shares = await entryShares(tx, invoice, payments);
  if (shares !== null && shares.length > 1) return "several";
  const only = shares?.[0];
  if (only === undefined) return null;
  return findCurrency(tx, only.entry.ticker);
}

/**
 * The entry a crypto refund of `invoice` goes out in: that of all its payments, late ones included
 * (a refund returns them too, and each was credited in its own entry), also one with more decimals
 * than the invoice's precision (the refund is then in that entry's units); "several" when they
 * came in on more than one entry.
 */
export async function refundEntryOf(tx: Tx, invoice: Invoice): Promise<Currency | null | "several"> {
  return entryOfPayments(tx, invoice, await listPayments(tx, invoice.id));
}

/**
 * The further entry a chain payment came in on, with the payment's amount in that entry's units (it
 * counts in the invoice's precision); null: the first entry.
 */
async function entryOfPayment(
  tx: Tx,
  invoice: Invoice,
  payment: IncomingPayment,
): Promise<{ entry: Currency; amountMinor: bigint } | null> {
  const network = payment.chain?.network;
  if (network === undefined) return null;
  const entries = await entriesOf(tx, invoice.currency);
  const first = entries[0];
  const entry = entries.find((e) => e.network === network && (invoice.currencyEntry ?? e.ticker) === e.ticker);
  if (!entry || !first || entry.ticker === first.ticker) return null;
  return { entry, amountMinor: inUnitsOf(payment.amountMinor, first.decimals, entry.decimals) };
}

/** Settled amounts (confirmed, not flagged or blocked) per network; null: not a chain payment. */
function summarizeSettledByNetwork(payments: readonly IncomingPayment[]): Map<string | null, bigint> {
  const sums = new Map<string | null, bigint>();
  for (const p of payments) {
    const network = p.chain?.network ?? null;
    const settled = summarizePayments([p]).settledMinor;
    if (settled > 0n) sums.set(network, (sums.get(network) ?? 0n) + settled);
  }
  return sums;
}

/** The settlement-currency credit of a payment confirmed after its invoice completed; once per payment. */
async function creditLatePayment(tx: Tx, invoice: Invoice, payment: IncomingPayment, now: string): Promise<void> {
  const { currency, settlement } = await invoiceCurrencies(tx, invoice);
  // Without autoconvert, in the entry the payment came in on (balances are per entry, product §23).
  const entry = settlement.ticker === currency.ticker ? await entryOfPayment(tx, invoice, payment) : null;
  const late = latePaymentMovement({
    invoiceId: invoice.id,
    merchantId: invoice.merchantId,
    paymentId: payment.id,
    currency: entry?.entry ?? currency,
    settlement: entry?.entry ?? settlement,
    amountMinor: entry?.amountMinor ?? payment.amountMinor,
  });
  if (late !== null) await postCredit(tx, late, now);
}

/** Applies a status change decided by the domain and, when it completes the invoice, credits it in the same transaction. */
async function changeStatus(
  tx: Tx,
  invoice: Invoice,
  change: StatusChange | null,
  payments: readonly IncomingPayment[],
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, TransitionError>> {
  if (change === null) return ok(invoice);
  const moved = await applyTransition(tx, invoice, change.to, change.cause, now, publicBaseUrl);
  if (moved.ok && moved.value.status === "completed" && change.cause !== "resolution_accepted") {
    await creditCompletion(tx, moved.value, payments, now);
  }
  return moved;
}

/**
 * Records an incoming payment for a locked invoice (see lockInvoice) and moves the invoice on.
 * A transaction id already recorded is the same payment seen again: it may confirm it, and
 * otherwise changes nothing (so a duplicate delivery is harmless); stating different facts for it
 * is a conflict. New payments are only taken while the invoice is payable.
 */
// longer than 70 lines: a payment seen again (which may confirm it) or a new one, then the status from
// all payments: both cases add to the one `payments` list the new status is computed from.
export async function recordPayment(
  tx: Tx,
  invoice: Invoice,
  event: PaymentEvent,
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, PaymentError>> {
  const payments = await listPayments(tx, invoice.id);
  const known = payments.find((p) => p.txId === event.txId);
  if (known) {
    const conflicts =
      (event.amountMinor !== undefined && event.amountMinor !== known.amountMinor) ||
      (event.fromAddress !== undefined && event.fromAddress !== known.fromAddress) ||
      (event.confirmed === false && known.confirmed) ||
      (event.amlFlag === true && known.amlStatus === "none") ||
      event.provider !== known.provider;
    if (conflicts) return err("payment_conflict", `transaction ${event.txId} was recorded with other details`);
    if (event.confirmed === false || known.confirmed) return ok(invoice);
    if (invoice.status === "completed") {
      // Seen before completion, confirmed after it: money that arrived, credited as an overpayment.
      // (Refunds wait for such payments, so no refund can have been paid out without it.)
      await confirmPayment(tx, known.id, now, await valueAtConfirmation(tx, invoice, known.amountMinor, now));
      if (creditable(known)) await creditLatePayment(tx, invoice, known, now);
      await touchInvoice(tx, invoice.id, now);
      return ok({ ...invoice, updatedAt: now });
    }
    if (!isPayable(invoice.status)) return err("invoice_not_payable", `the invoice is ${invoice.status}`);
    await confirmPayment(tx, known.id, now, await valueAtConfirmation(tx, invoice, known.amountMinor, now));
    known.confirmed = true;
  } else {
    if (!isPayable(invoice.status)) return err("invoice_not_payable", `the invoice is ${invoice.status}`);
    // After expires_at a new payment no longer counts, whether or not the expiry worker has run yet.
    // A chain payment counts by its block's stamp, and one stamped at expires_at is on time (§19).
    const expired =
      invoice.expiresAt !== null &&
      (event.arrivedAt === undefined ? invoice.expiresAt <= now : invoice.expiresAt < event.arrivedAt);
    if (expired) {
      return err("invoice_not_payable", `the invoice expired at ${invoice.expiresAt}`);
    }
    const amountMinor = event.amountMinor ?? amountDue(invoice.finalAmountMinor, payments);
    if (amountMinor <= 0n) return err("nothing_due", "payments seen already cover final_amount");
    const confirmed = event.confirmed ?? true;
    payments.push(
      await insertPayment(
        tx,
        {
          invoiceId: invoice.id,
          txId: event.txId,
          amountMinor,
          fromAddress: event.fromAddress ?? null,
          confirmed,
          amlStatus: event.amlFlag ? "flagged" : event.unscreened ? "unscreened" : "none",
          provider: event.provider,
          chain: event.chain ?? null,
          value: confirmed ? await valueAtConfirmation(tx, invoice, amountMinor, now) : null,
        },
        now,
      ),
    );
  }
  const apiSource = invoice.apiSource === null && event.provider !== null ? event.provider : undefined;
  await touchInvoice(tx, invoice.id, now, apiSource);
  const touched: Invoice = { ...invoice, updatedAt: now, apiSource: apiSource ?? invoice.apiSource };
  const counted = onTimePayments(payments);
  return changeStatus(
    tx,
    touched,
    statusAfterPayments(touched.status, touched.finalAmountMinor, counted),
    counted,
    now,
    publicBaseUrl,
  );
}

/**
 * What screening said of a new payment's sender before it was recorded (product §21): `pending`
 * when no answer is known yet (the screening worker asks again); it settles nothing meanwhile.
 */
export type SenderScreening = "clear" | "listed" | "pending";

/** The AML status a new payment is recorded with. */
function amlStatusOf(screening: SenderScreening): AmlStatus {
  return screening === "listed" ? "flagged" : screening === "pending" ? "unscreened" : "none";
}

/** A transfer to an invoice's deposit address, as the scanner saw it on the chain (product §12). */
export interface ChainPaymentEvent {
  place: ChainPaymentPlace;
  amountMinor: bigint;
  fromAddress: string;
  /** At least `confirmations` blocks deep. */
  confirmed: boolean;
  /** The block's time (ISO-8601). */
  arrivedAt: string;
  /** The sender's screening, for a payment not recorded yet (a known one keeps its own). */
  screening: SenderScreening;
}

/** The payment's key on its network: `<hash>` for a native transfer, `<hash>:<logIndex>` for a token transfer. */
export function chainTxId(place: Pick<ChainPaymentPlace, "txHash" | "logIndex">): string {
  return place.logIndex === null ? place.txHash : `${place.txHash}:${place.logIndex}`;
}

export type ChainPaymentOutcome = "recorded" | "confirmed" | "unchanged" | "late";

/**
 * Records a chain payment for a locked invoice, once per (network, tx hash, log index), through
 * the same rules as every other payment (recordPayment). Money that reaches an invoice that no
 * longer takes payments (expired, failed, blocked, refunded, or after expires_at) cannot be sent
 * back by refusing it: it is recorded as late and shown; a late payment to a completed invoice is
 * credited as an overpayment once confirmed, others wait for a resolution (resolveInvoice).
 */
export async function recordChainPayment(
  tx: Tx,
  invoice: Invoice,
  event: ChainPaymentEvent,
  now: string,
  publicBaseUrl: string,
): Promise<ChainPaymentOutcome> {
  const txId = chainTxId(event.place);
  const payments = await listPayments(tx, invoice.id);
  const known = payments.find((p) => p.txId === txId);
  if (known) {
    if (!event.confirmed || known.confirmed) return "unchanged";
    if (!known.late && (isPayable(invoice.status) || invoice.status === "completed")) {
      const confirmed = await recordPayment(tx, invoice, { txId, confirmed: true, provider: null }, now, publicBaseUrl);
      assertOk(confirmed, `confirming ${txId}`);
      return "confirmed";
    }
    await confirmPayment(tx, known.id, now, await valueAtConfirmation(tx, invoice, known.amountMinor, now));
    if (invoice.status === "completed" && creditable(known)) {
      await creditLatePayment(tx, invoice, { ...known, confirmed: true }, now);
    }
    if (known.amlStatus === "blocked") await holdBlockedPayment(tx, invoice, known, now);
    await touchInvoice(tx, invoice.id, now);
    return "confirmed";
  }
  // On time: stamped at or before expires_at (product §19), however late the scanner saw it.
  const onTime = isPayable(invoice.status) && (invoice.expiresAt === null || invoice.expiresAt >= event.arrivedAt);
  if (onTime) {
    const recorded = await recordPayment(
      tx,
      invoice,
      {
        txId,
        amountMinor: event.amountMinor,
        fromAddress: event.fromAddress,
        confirmed: event.confirmed,
        provider: null,
        arrivedAt: event.arrivedAt,
        chain: event.place,
        amlFlag: event.screening === "listed",
        unscreened: event.screening === "pending",
      },
      now,
      publicBaseUrl,
    );
    assertOk(recorded, `recording ${txId}`);
    return "recorded";
  }
  const late = await insertPayment(
    tx,
    {
      invoiceId: invoice.id,
      txId,
      amountMinor: event.amountMinor,
      fromAddress: event.fromAddress,
      confirmed: event.confirmed,
      amlStatus: amlStatusOf(event.screening),
      provider: null,
      chain: event.place,
      late: true,
      value: event.confirmed ? await valueAtConfirmation(tx, invoice, event.amountMinor, now) : null,
    },
    now,
  );
  if (event.confirmed && invoice.status === "completed" && creditable(late)) {
    await creditLatePayment(tx, invoice, late, now);
  }
  await touchInvoice(tx, invoice.id, now);
  return "late";
}

/** A payment screening has passed (or the operator cleared): it may be credited. */
function creditable(payment: IncomingPayment): boolean {
  return payment.amlStatus === "none" || payment.amlStatus === "cleared";
}

/** A confirmed blocked payment goes to the operator's screening account (once per payment). */
async function holdBlockedPayment(tx: Tx, invoice: Invoice, payment: IncomingPayment, now: string): Promise<void> {
  const held = blockedPaymentMovement({
    invoiceId: invoice.id,
    paymentId: payment.id,
    currency: invoice.currency,
    amountMinor: payment.amountMinor,
  });
  await postCredit(tx, held, now);
}

export type AmlError = "invoice_not_in_aml_check" | TransitionError;

/** A screening decision on the flagged (on-time) payments of a locked invoice in aml_check. */
export async function decideAml(
  tx: Tx,
  invoice: Invoice,
  decision: AmlDecision,
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, AmlError>> {
  if (invoice.status !== "aml_check") {
    return err("invoice_not_in_aml_check", `the invoice is ${invoice.status}, not aml_check`);
  }
  const next = amlStatusAfter(decision);
  // Its on-time payments: a flagged late one is decided on its own (decideLatePayment), since
  // what clearing it means (an overpayment, a resolution) is not what clearing the invoice does.
  const flagged = onTimePayments(await listPayments(tx, invoice.id)).filter((p) => p.amlStatus === "flagged");
  for (const p of flagged) await setPaymentAmlStatus(tx, p.id, "flagged", next, now);
  if (decision === "block") {
    for (const p of flagged) if (p.confirmed) await holdBlockedPayment(tx, invoice, p, now);
  }
  const payments = onTimePayments(await listPayments(tx, invoice.id));
  const change = statusAfterAml(invoice.status, decision, invoice.finalAmountMinor, payments);
  return changeStatus(tx, invoice, change, payments, now, publicBaseUrl);
}

export type LatePaymentAmlError = "payment_not_found" | "payment_not_flagged" | "payment_not_late";

/**
 * A screening decision on one flagged late payment of a locked invoice (product §21): a payment
 * that reached the invoice after it stopped taking payments, so no invoice status moves. `clear`
 * makes it count like any late payment (credited as an overpayment of a completed invoice, else
 * resolvable, §12/§19); `block` moves it, once confirmed, to the operator's screening account. The
 * merchant hears of it through an invoice event (its callback), as of a resolution.
 */
export async function decideLatePayment(
  tx: Tx,
  invoice: Invoice,
  paymentId: string,
  decision: AmlDecision,
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, LatePaymentAmlError>> {
  const payment = (await listPayments(tx, invoice.id)).find((p) => p.id === paymentId);
  if (!payment) return err("payment_not_found", `the invoice has no payment ${paymentId}`);
  if (payment.amlStatus !== "flagged") {
    return err(
      "payment_not_flagged",
      `the payment is ${payment.amlStatus}, not flagged: it was decided already or never flagged`,
    );
  }
  if (!payment.late) {
    return err("payment_not_late", "the payment came in time: decide the invoice in aml_check, without paymentId");
  }
  const decided = { ...payment, amlStatus: amlStatusAfter(decision) };
  await setPaymentAmlStatus(tx, paymentId, "flagged", decided.amlStatus, now);
  if (decided.confirmed && decision === "block") await holdBlockedPayment(tx, invoice, decided, now);
  if (decided.confirmed && decision === "clear" && invoice.status === "completed") {
    await creditLatePayment(tx, invoice, decided, now);
  }
  await touchInvoice(tx, invoice.id, now);
  const touched: Invoice = { ...invoice, updatedAt: now };
  const { currency } = await invoiceCurrencies(tx, invoice);
  const view = invoiceView(touched, currency.decimals, await listPayments(tx, invoice.id), publicBaseUrl);
  await recordInvoiceEvent(tx, view, now);
  return ok(touched);
}

/**
 * Applies the screening of one payment that waited for it (aml_status `unscreened`) to its locked
 * invoice: clear lets it settle (it may complete the invoice, or be credited as an overpayment of
 * a completed one); listed, or no answer after the last attempt, flags it and the invoice goes to
 * aml_check. Answers false when the payment no longer waits.
 */
export async function applyScreening(
  tx: Tx,
  invoice: Invoice,
  paymentId: string,
  outcome: "clear" | ScreeningReason,
  now: string,
  publicBaseUrl: string,
): Promise<boolean> {
  const payment = (await listPayments(tx, invoice.id)).find((p) => p.id === paymentId);
  if (payment?.amlStatus !== "unscreened") return false;
  await markScreened(tx, paymentId, outcome, now);
  const payments = await listPayments(tx, invoice.id);
  const updated = payments.find((p) => p.id === paymentId) as IncomingPayment;
  if (invoice.status === "completed" && updated.confirmed && creditable(updated)) {
    await creditLatePayment(tx, invoice, updated, now);
  }
  await touchInvoice(tx, invoice.id, now);
  const touched: Invoice = { ...invoice, updatedAt: now };
  const counted = onTimePayments(payments);
  const change = statusAfterPayments(touched.status, touched.finalAmountMinor, counted);
  const moved = await changeStatus(tx, touched, change, counted, now, publicBaseUrl);
  assertOk(moved, `screening ${paymentId}`);
  return true;
}

/**
 * One bounded batch of the expiry worker: claims due invoices (skipping rows other processes hold)
 * and expires or fails each as product §5 says, in one transaction. Answers how many it handled.
 */
export async function expireDueInvoices(
  store: Store,
  now: string,
  limit: number,
  publicBaseUrl: string,
): Promise<number> {
  return store.transaction(async (tx) => {
    const due = await claimDueInvoices(tx, now, limit);
    const payments = await paymentsOf(
      tx,
      due.map((i) => i.id),
    );
    const ofLinks = await linkInvoiceIds(
      tx,
      due.map((i) => i.id),
    );
    for (const invoice of due) {
      const ofInvoice = onTimePayments(payments.get(invoice.id) ?? []);
      const change = statusAtExpiry(invoice.status, invoice.finalAmountMinor, ofInvoice);
      if (change === null) {
        await deferExpiry(tx, invoice);
        continue;
      }
      // A payment link's invoice nobody paid into was a look, not an order (product §25): it expires
      // without an event or a callback, so anonymous visits cannot make the service call the merchant.
      const abandoned = change.to === "expired" && ofLinks.has(invoice.id);
      const moved = abandoned
        ? await setStatus(tx, invoice, change.to, change.cause, now)
        : await applyTransition(tx, invoice, change.to, change.cause, now, publicBaseUrl);
      // Claimed rows are locked (PostgreSQL) or the transaction is serialized (SQLite): a refusal is a bug.
      assertOk(moved, `expiring ${invoice.id}`);
    }
    return due.length;
  });
}
