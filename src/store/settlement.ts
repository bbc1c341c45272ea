// Settlement's queries and writes inside an invoice's transaction: its currencies at its quoted rates, the entries its payments came on, a payment's value at confirmation, a credit posted once, and a chain payment's key (the rules are src/app's: recordPayment, recordChainPayment, settlement).
import { type Currency, inUnitsOf } from "../domain/currencies.ts";
import type { ChainPaymentPlace } from "../domain/invoices.ts";
import type { Movement } from "../domain/ledger.ts";
import { atQuotedRate, type PaymentValue, paymentValue } from "../domain/rates.ts";
import { assert, assertOk } from "../domain/result.ts";
import { type EntryShare, summarizePayments } from "../domain/settlement.ts";
import { entriesOf, findCurrency } from "./currencies.ts";
import { type IncomingPayment, type Invoice, listPayments } from "./invoices.ts";
import { postMovement } from "./ledger.ts";
import { liveRate } from "./rateReadings.ts";
import type { Tx } from "./store.ts";

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
export async function valueAtConfirmation(
  tx: Tx,
  invoice: Invoice,
  amountMinor: bigint,
  now: string,
): Promise<PaymentValue> {
  const catalog = await findCurrency(tx, invoice.currency);
  assert(catalog, `invoice ${invoice.id} has a catalog currency`);
  const fixed = atQuotedRate(catalog, invoice.quoteRates ?? null).rateUsd;
  return paymentValue(amountMinor, catalog.decimals, fixed, await liveRate(tx, catalog, Date.parse(now)));
}

/** Posts an invoice credit; a credit to a merchant cannot be refused, and one already posted is done. */
export async function postCredit(tx: Tx, credit: Movement, now: string): Promise<void> {
  const posted = await postMovement(tx, credit, now);
  if (!posted.ok && posted.error !== "already_posted") assertOk(posted, "an invoice credit cannot be refused");
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
export async function entryOfPayment(
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

/**
 * What screening said of a new payment's sender before it was recorded (product §21): `pending`
 * when no answer is known yet (the screening worker asks again); it settles nothing meanwhile.
 */
export type SenderScreening = "clear" | "listed" | "pending";

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

/** What recording a chain payment did (app/recordChainPayment.ts): the scanner counts all but `unchanged`. */
export type ChainPaymentOutcome = "recorded" | "confirmed" | "unchanged" | "late";

/** The payment's key on its network: `<hash>` for a native transfer, `<hash>:<logIndex>` for a token transfer. */
export function chainTxId(place: Pick<ChainPaymentPlace, "txHash" | "logIndex">): string {
  return place.logIndex === null ? place.txHash : `${place.txHash}:${place.logIndex}`;
}

/** The id of the confirmed payment `event` recorded, or null when it is not recorded or not confirmed yet: what a flush or a sweep moves on. */
export async function confirmedPaymentId(tx: Tx, event: ChainPaymentEvent): Promise<string | null> {
  const payment = await tx.db
    .selectFrom("invoice_payments")
    .select(["id", "confirmed"])
    .where("network", "=", event.place.network)
    .where("tx_id", "=", chainTxId(event.place))
    .executeTakeFirst();
  return payment?.confirmed === 1 ? payment.id : null;
}
