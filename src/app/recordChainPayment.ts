// Record a chain payment the scanner saw or confirmed (product §12): on time through recordPayment, late money recorded and shown, credited once confirmed when its invoice completed; the scanner receives it as a port (chain code never imports a use case).
import { creditsLatePayments, isPayable } from "../domain/invoiceStatus.ts";
import { assertOk } from "../domain/result.ts";
import type { AmlStatus } from "../domain/settlement.ts";
import { confirmPayment, type Invoice, insertPayment, listPayments, touchInvoice } from "../store/invoices.ts";
import {
  type ChainPaymentEvent,
  type ChainPaymentOutcome,
  chainTxId,
  type SenderScreening,
  valueAtConfirmation,
} from "../store/settlement.ts";
import type { Tx } from "../store/store.ts";
import { recordPayment } from "./recordPayment.ts";
import { creditable, creditLatePayment, holdBlockedPayment } from "./settlement.ts";

/**
 * The scanner's port for settling what it saw (src/chain/scanner.ts SettleChainPayment), built at
 * the composition root (src/workers/scanner.ts) with the service's public base URL.
 */
export function chainPaymentSettler(publicBaseUrl: string) {
  return (tx: Tx, invoice: Invoice, event: ChainPaymentEvent, now: string): Promise<ChainPaymentOutcome> =>
    recordChainPayment(tx, invoice, event, now, publicBaseUrl);
}

/** The AML status a new payment is recorded with. */
function amlStatusOf(screening: SenderScreening): AmlStatus {
  return screening === "listed" ? "flagged" : screening === "pending" ? "unscreened" : "none";
}

/**
 * Records a chain payment for a locked invoice, once per (network, tx hash, log index), through
 * the same rules as every other payment (recordPayment). Money that reaches an invoice that no
 * longer takes payments (expired, failed, blocked, refunded, or after expires_at) cannot be sent
 * back by refusing it: it is recorded as late and shown; a late payment to an invoice paid in full
 * before (completed, or refunded since: creditsLatePayments) is credited as an overpayment once
 * confirmed, others wait for a resolution (resolveInvoice).
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
    if (creditsLatePayments(invoice.status) && creditable(known)) {
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
  if (event.confirmed && creditsLatePayments(invoice.status) && creditable(late)) {
    await creditLatePayment(tx, invoice, late, now);
  }
  await touchInvoice(tx, invoice.id, now);
  return "late";
}
