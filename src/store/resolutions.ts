// Resolving a late, partial or stranded payment (product §12, §19): `accept` completes a failed or expired invoice with what was confirmed; `refund` returns it to the payer through a refund payout. Each resolution covers the confirmed payments no earlier one covered, so later money is resolved again; the operator API and the owner's dashboard both call resolveInvoice.
import { createHash } from "node:crypto";
import { inUnitsOf } from "../domain/currencies.ts";
import { checkEvmAddress } from "../domain/evmAddress.ts";
import { priceInvoice } from "../domain/fees.ts";
import type { Invoice } from "../domain/invoices.ts";
import { invoiceView } from "../domain/invoices.ts";
import { merchantAccount, movement, SYSTEM_ACCOUNTS } from "../domain/ledger.ts";
import { parseDecimal } from "../domain/money.ts";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { err, invariantViolation, ok, type Result } from "../domain/result.ts";
import {
  completionMovement,
  type EntryShare,
  splitCompletionMovement,
  summarizePayments,
} from "../domain/settlement.ts";
import { recordInvoiceEvent } from "./events.ts";
import { applyTransition, listPayments } from "./invoices.ts";
import { postMovement } from "./ledger.ts";
import { findMerchant } from "./merchants.ts";
import { acceptPayout } from "./payouts.ts";
import { insertRefund } from "./refunds.ts";
import { entryOfPayments, entryShares, invoiceCurrencies } from "./settlement.ts";
import type { Tx } from "./store.ts";

export type Resolution = { action: "accept" } | { action: "refund"; address: string };

export type ResolutionError =
  | "invoice_already_resolved"
  | "nothing_to_resolve"
  | "invalid_address"
  | "invoice_status_changed"
  | "payments_unconfirmed"
  | "payments_under_aml_review"
  | "payments_on_several_networks";

/** Statuses whose received money waits for a resolution: the invoice ended without completing. */
const RESOLVABLE = new Set(["failed", "expired"]);

/**
 * The id of a resolution refund (and its payout): one per resolution of the invoice (the first
 * `resolution-<invoice>`, the n-th `resolution-<invoice>-<n>`), so one resolution cannot pay twice.
 */
export function resolutionRefundId(invoiceId: string, n = 1): string {
  return n === 1 ? `resolution-${invoiceId}` : `resolution-${invoiceId}-${n}`;
}

/**
 * What a resolution would cover (product §19): the invoice's confirmed payments no resolution
 * covered yet, and how many resolutions came before. Answers null while a payment is unconfirmed
 * (a resolution must not leave part of the money behind, nor count money that may vanish). A
 * payment flagged by screening, or still waiting for it, is left out (product §21): its money is
 * neither the merchant's nor the sender's until the operator decides (then a later resolution
 * covers it, when cleared); `underReview` counts them.
 */
async function unresolvedPayments(tx: Tx, invoiceId: string) {
  const rows = await tx.db
    .selectFrom("invoice_payments")
    .select(["id", "confirmed", "resolved_at", "aml_status"])
    .where("invoice_id", "=", invoiceId)
    .execute();
  if (rows.some((r) => r.confirmed !== 1)) return null;
  const unresolved = rows.filter((r) => r.resolved_at === null || r.resolved_at === undefined);
  const reviewed = (r: (typeof rows)[number]) => r.aml_status === "flagged" || r.aml_status === "unscreened";
  const open = new Set(unresolved.filter((r) => !reviewed(r)).map((r) => r.id));
  const before = new Set(rows.flatMap((r) => (r.resolved_at ? [r.resolved_at] : []))).size;
  return { open, before, underReview: unresolved.filter(reviewed).length };
}

/**
 * Resolves a locked invoice (lockInvoice) once. `accept` moves a failed or expired invoice to
 * completed and credits its confirmed payments, with fees computed on what was paid; `refund`
 * sends the confirmed amount less the network fee back to `address` through a refund payout (the
 * payout machinery carries it out; a failed payout credits the merchant, who may refund again).
 * Both post to the ledger and record a signed callback in the same transaction.
 */
export async function resolveInvoice(
  tx: Tx,
  invoice: Invoice,
  resolution: Resolution,
  now: string,
  publicBaseUrl: string,
  /** What this service pays out by: a refund's rail is chosen from it (store/payouts.ts payoutRailFor). */
  railPolicy?: PayoutRailPolicy,
): Promise<Result<Invoice, ResolutionError>> {
  const row = await tx.db.selectFrom("invoices").select("resolution").where("id", "=", invoice.id).executeTakeFirst();
  if (!RESOLVABLE.has(invoice.status)) {
    if (row?.resolution) return err("invoice_already_resolved", `the invoice was resolved with ${row.resolution}`);
    return err("nothing_to_resolve", `the invoice is ${invoice.status}; only failed or expired invoices are resolved`);
  }
  const unresolved = await unresolvedPayments(tx, invoice.id);
  if (unresolved === null) {
    return err("payments_unconfirmed", "a payment of the invoice is not confirmed yet: resolve it once it is");
  }
  const payments = await listPayments(tx, invoice.id);
  // Only what no earlier resolution covered: a later payment is resolved on its own, never twice.
  const covered = payments.filter((p) => unresolved.open.has(p.id));
  const confirmedMinor = summarizePayments(covered).settledMinor;
  if (confirmedMinor <= 0n) {
    if (unresolved.underReview > 0) {
      return err(
        "payments_under_aml_review",
        "the invoice's unresolved payments are flagged by screening or wait for it: the operator decides them first (POST /admin/v1/invoices/{id}/aml with their paymentId)",
      );
    }
    if (row?.resolution) return err("invoice_already_resolved", `the invoice was resolved with ${row.resolution}`);
    return err("nothing_to_resolve", "the invoice has no confirmed payment");
  }
  const currencies = await invoiceCurrencies(tx, invoice);
  // Without autoconvert, in the entry the payments came in on (balances are per entry, product §23).
  const sameCurrency = currencies.settlement.ticker === currencies.currency.ticker;
  // Also an entry with other decimals than the invoice's units: the money is there, in its units.
  const entry = sameCurrency ? await entryOfPayments(tx, invoice, covered) : null;
  if (entry === "several" && resolution.action === "refund")
    return err("payments_on_several_networks", "the payments came in on several networks: a refund goes out on one");
  const currency = entry !== null && entry !== "several" ? entry : currencies.currency;
  const settlement = entry !== null && entry !== "several" ? entry : currencies.settlement;
  const merchant = await findMerchant(tx, invoice.merchantId);
  if (!merchant) throw invariantViolation(`invoice ${invoice.id} is complete`);
  const facts: Unresolved = {
    invoice,
    // Payments count in the invoice's precision; posted in the entry's own units.
    confirmedMinor: inUnitsOf(confirmedMinor, currencies.currency.decimals, currency.decimals),
    currency,
    shares: entry === "several" ? await entryShares(tx, invoice, covered) : null,
    n: unresolved.before + 1,
    coveredIds: [...unresolved.open],
    now,
    publicBaseUrl,
  };
  if (resolution.action === "accept") return resolveByAccepting(tx, facts, merchant.feePercent, settlement);
  const refunded = await resolveByRefunding(tx, facts, resolution.address, railPolicy);
  if (!refunded.ok) return refunded;
  // The status stays; the merchant still hears of the resolution: an event (product §15) carrying
  // the invoice, queued to its callback_url when it has one.
  const view = invoiceView({ ...invoice, updatedAt: now }, currencies.currency.decimals, payments, publicBaseUrl);
  await recordInvoiceEvent(tx, view, now);
  return ok({ ...invoice, updatedAt: now });
}

/** What both resolutions start from: the payments no earlier resolution covered. */
interface Unresolved {
  invoice: Invoice;
  confirmedMinor: bigint;
  currency: Awaited<ReturnType<typeof invoiceCurrencies>>["currency"];
  /** The payments' share per catalog entry when they came in on several (accepted per entry); null: one entry. */
  shares: EntryShare[] | null;
  /** This resolution's number on the invoice (a later payment is resolved again). */
  n: number;
  coveredIds: string[];
  now: string;
  publicBaseUrl: string;
}

/** The merchant keeps what was paid: it is the price, and the fees come out of it. */
async function resolveByAccepting(
  tx: Tx,
  f: Unresolved,
  feePercentText: string,
  settlement: Awaited<ReturnType<typeof invoiceCurrencies>>["settlement"],
): Promise<Result<Invoice, ResolutionError>> {
  const { invoice, currency, confirmedMinor, now } = f;
  const feePercent = parseDecimal(feePercentText);
  if (feePercent === null) throw invariantViolation(`merchant ${invoice.merchantId} has a decimal fee percent`);
  // What was paid is the price: the payer is not asked for more, the fees come out of it.
  const priced = priceInvoice(confirmedMinor, currency, { feePercent, feesPaidBy: "merchant" });
  if (!priced.ok) return err("nothing_to_resolve", "the confirmed amount does not cover the fees");
  const moved = await applyTransition(tx, invoice, "completed", "resolution_accepted", now, f.publicBaseUrl);
  if (!moved.ok) return err("invoice_status_changed", moved.detail);
  const input = {
    invoiceId: invoice.id,
    merchantId: invoice.merchantId,
    currency,
    settlement,
    finalAmountMinor: confirmedMinor,
    merchantFeeMinor: priced.value.merchantFee,
    networkAndOtherFeesMinor: priced.value.networkAndOtherFees,
    merchantReceiveAmountMinor: priced.value.merchantReceiveAmount,
    settledMinor: confirmedMinor,
  };
  const completion =
    f.shares === null ? completionMovement(input) : splitCompletionMovement(input, f.shares, currency.decimals);
  const posted = await postMovement(tx, completion.movement, now);
  if (!posted.ok) throw invariantViolation(`a resolution credit is posted once (${posted.error})`);
  await markResolved(tx, invoice.id, "accept", f.coveredIds, now);
  return ok(moved.value);
}

/**
 * The money reaches the merchant's balance and leaves it through the refund payout at once: the
 * one payout machinery sends it, and a failed payout leaves it with the merchant.
 */
async function resolveByRefunding(
  tx: Tx,
  f: Unresolved,
  addressText: string,
  railPolicy: PayoutRailPolicy | undefined,
): Promise<Result<void, ResolutionError>> {
  const { invoice, currency, confirmedMinor, n, now } = f;
  const address = checkEvmAddress(addressText);
  if (!address.ok) return err("invalid_address", address.detail);
  const refundMinor = confirmedMinor - currency.networkFeeMinor;
  if (refundMinor <= 0n) return err("nothing_to_resolve", "the confirmed amount does not cover the network fee");
  await postResolutionCredit(tx, f, refundMinor);
  const requestKey = resolutionRefundId(invoice.id, n);
  if (!(await claimResolutionRequest(tx, invoice, requestKey, address.value, now)))
    return err("invoice_already_resolved", "the invoice already has a resolution refund");
  const recorded = await insertRefund(tx, {
    requestKey,
    merchantId: invoice.merchantId,
    invoiceId: invoice.id,
    type: "crypto",
    currency: currency.ticker,
    amountMinor: refundMinor,
    debitCurrency: currency.ticker,
    debitMinor: refundMinor,
    toAddress: address.value,
    withdrawToSameAddress: false,
    reason: "resolution of a late or partial payment",
    createdAt: now,
    // A later resolution's refund returns later money beside the first one's, which may still be
    // live: it is recorded as one of several (product §25), so the interface's one full refund per
    // invoice stays the first (docs/chain-faults.md, "Resolutions name their payments").
    ...(n > 1 ? { partial: { paidShareMinor: confirmedMinor, networkFeePaidBy: "payer" as const } } : {}),
  });
  if (!recorded) return err("invoice_already_resolved", "the invoice already has a refund");
  const accepted = await acceptPayout(
    tx,
    {
      requestKey,
      operation: "refund",
      merchantId: invoice.merchantId,
      cause: "refund",
      debit: { currency: currency.ticker, amount: refundMinor },
      payout: { currency: currency.ticker, amount: refundMinor, destination: address.value },
      memo: `refund of invoice ${invoice.id} (resolution)`,
      railPolicy,
    },
    now,
  );
  if (!accepted.ok) throw invariantViolation("the resolution credit covers its refund");
  await markResolved(tx, invoice.id, "refund", f.coveredIds, now);
  return ok(undefined);
}

async function postResolutionCredit(tx: Tx, f: Unresolved, refundMinor: bigint): Promise<void> {
  const { invoice, currency, confirmedMinor, n } = f;
  const credit = await postMovement(
    tx,
    movement({
      cause: "invoice",
      causeId: invoice.id,
      kind: n === 1 ? "resolution_refund" : `resolution_refund:${n}`,
      memo: `invoice ${invoice.id} resolved: refund to the payer`,
      postings: [
        { account: SYSTEM_ACCOUNTS.incomingPayments, currency: currency.ticker, amount: -confirmedMinor },
        ...(currency.networkFeeMinor > 0n
          ? [{ account: SYSTEM_ACCOUNTS.networkFees, currency: currency.ticker, amount: currency.networkFeeMinor }]
          : []),
        { account: merchantAccount(invoice.merchantId), currency: currency.ticker, amount: refundMinor },
      ],
    }),
    f.now,
  );
  if (!credit.ok) throw invariantViolation(`a resolution credit is posted once (${credit.error})`);
}

/** Refunds and payouts belong to a request id: the resolution is the operation (no merchant signed it). False: it exists. */
async function claimResolutionRequest(
  tx: Tx,
  invoice: Invoice,
  requestKey: string,
  address: string,
  now: string,
): Promise<boolean> {
  const claimed = await tx.db
    .insertInto("signed_requests")
    .values({
      request_id: requestKey,
      request_id_sent: requestKey,
      merchant_id: invoice.merchantId,
      route: "/admin/v1/invoices/{id}/resolve",
      body_hash: createHash("sha256").update(`refund:${address}`).digest("hex"),
      state: "completed",
      response_status: null,
      response_body: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("request_id").doNothing())
    .executeTakeFirst();
  return (claimed.numInsertedOrUpdatedRows ?? 0n) !== 0n;
}

/** The invoice's latest resolution, and the payments it covered (a later payment is resolved again). */
async function markResolved(
  tx: Tx,
  invoiceId: string,
  resolution: "accept" | "refund",
  paymentIds: readonly string[],
  now: string,
) {
  await tx.db
    .updateTable("invoices")
    .set({ resolution, resolved_at: now, updated_at: now })
    .where("id", "=", invoiceId)
    .execute();
  if (paymentIds.length > 0) {
    await tx.db
      .updateTable("invoice_payments")
      .set({ resolved_at: now })
      .where("id", "in", [...paymentIds])
      .where("resolved_at", "is", null)
      .execute();
  }
}
