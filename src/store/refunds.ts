// Refund repository: the accepted refund's facts, its public view (with its payout's progress), what its payout's settlement does to it and its invoice or held deposit (the move is domain/refund.ts statusAfterRefund), and the invoice facts the refund rules read.
import { createHash } from "node:crypto";
import { type Kysely, sql } from "kysely";
import { type Currency, inUnitsOf } from "../domain/currencies.ts";
import { type DepositRefundObject, type DepositRefundStatus, depositTransition } from "../domain/depositAddresses.ts";
import { SYSTEM_ACCOUNTS } from "../domain/ledger.ts";
import { formatAmount } from "../domain/money.ts";
import type { PayoutOutcome, PayoutState } from "../domain/payout.ts";
import { isPayoutState, publicStatus } from "../domain/payout.ts";
import { atQuotedRate } from "../domain/rates.ts";
import { type RefundInvoiceFacts, type RefundStatus, type RefundType, statusAfterRefund } from "../domain/refund.ts";
import { assert, ok, type Result } from "../domain/result.ts";
import { findCurrency } from "./currencies.ts";
import { applyTransition, type Invoice, incomingPaymentsSummary, lockInvoice } from "./invoices.ts";
import { type ListError, merchantPage, type Page, type PageWindow } from "./keyset.ts";
import type { Database } from "./schema.ts";
import type { Tx } from "./store.ts";

export interface RefundRecord {
  requestKey: string;
  merchantId: string;
  /** The refunded invoice; null for a customer's held deposit (`depositId`, product §30). */
  invoiceId: string | null;
  /** The held deposit refunded by claim link (product §30); absent or null for an invoice's refund. */
  depositId?: string | null | undefined;
  type: RefundType;
  currency: string;
  amountMinor: bigint;
  debitCurrency: string;
  debitMinor: bigint;
  toAddress: string | null;
  withdrawToSameAddress: boolean;
  reason: string | null;
  createdAt: string;
  /** A partial refund (product §25): several per invoice, each taking `paidShareMinor` of paid_amount. */
  partial?: { paidShareMinor: bigint; networkFeePaidBy: NetworkFeePayer } | undefined;
}

/** Who bears a partial refund's payout network fee (product §25). */
export type NetworkFeePayer = "merchant" | "payer";

/**
 * Records an accepted refund as `processing`. A refund that returns the whole paid amount (not
 * partial) is recorded unless the invoice already has a live (not failed) one of its kind: the
 * partial unique index decides, and ON CONFLICT DO NOTHING reports it instead of raising (a unique
 * violation would abort a PostgreSQL transaction). Partial refunds are bounded by their caller,
 * under the invoice's lock. Answers whether it was recorded.
 */
export async function insertRefund(tx: Tx, refund: RefundRecord): Promise<boolean> {
  const insert = tx.db.insertInto("refunds").values({
    request_id: refund.requestKey,
    merchant_id: refund.merchantId,
    invoice_id: refund.invoiceId,
    type: refund.type,
    currency: refund.currency,
    amount: refund.amountMinor.toString(),
    debit_currency: refund.debitCurrency,
    debit_amount: refund.debitMinor.toString(),
    to_address: refund.toAddress,
    withdraw_to_same_address: refund.withdrawToSameAddress ? 1 : 0,
    reason: refund.reason,
    status: "processing",
    created_at: refund.createdAt,
    partial: refund.partial ? 1 : 0,
    paid_share: refund.partial ? refund.partial.paidShareMinor.toString() : null,
    network_fee_paid_by: refund.partial ? refund.partial.networkFeePaidBy : null,
    deposit_id: refund.depositId ?? null,
  });
  // A deposit's refund is bounded by its caller's compare-and-set on the deposit (the index backs it up).
  if (refund.partial || refund.depositId) {
    await insert.execute();
    return true;
  }
  const result = await insert
    // The predicate names the partial index (migration 024); literals, since PostgreSQL infers the index from it before binding parameters.
    .onConflict((oc) =>
      oc
        .column("invoice_id")
        .where(sql.ref("status"), "<>", sql.lit("failed"))
        .where(sql.ref("partial"), "=", sql.lit(0))
        .doNothing(),
    )
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** Interface fact 2: whether the invoice has a refund that is processing or completed. */
export async function hasLiveRefund(tx: Tx, invoiceId: string): Promise<boolean> {
  const row = await tx.db
    .selectFrom("refunds")
    .select("request_id")
    .where("invoice_id", "=", invoiceId)
    .where("status", "<>", "failed")
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * What the invoice's live (processing or completed) refunds take of its paid amount, in minor units
 * of the invoice currency, and whether every one of them completed. A refund that is not partial
 * takes all of it (`whole`).
 */
export async function liveRefundShares(
  tx: Tx,
  invoiceId: string,
): Promise<{ takenMinor: bigint; whole: boolean; allCompleted: boolean; count: number }> {
  const rows = await tx.db
    .selectFrom("refunds")
    .select(["paid_share", "status"])
    .where("invoice_id", "=", invoiceId)
    .where("status", "<>", "failed")
    .execute();
  let takenMinor = 0n;
  let whole = false;
  for (const row of rows) {
    if (row.paid_share === null) whole = true;
    else takenMinor += BigInt(row.paid_share);
  }
  return { takenMinor, whole, allCompleted: rows.every((r) => r.status === "completed"), count: rows.length };
}

/** A refund with what its public object needs: the id as first accepted, decimals, and the payout's progress. */
export interface RefundView extends RefundRecord {
  /** The ticker the interface answers (`USDT` for the entry `USDT_BASE`, product §23). */
  ticker: string;
  requestIdSent: string;
  decimals: number;
  status: RefundStatus;
  /** Null while a claim refund waits for its payer's address (no payout yet), and after it expired. */
  payoutState: PayoutState | null;
  processorStatus: string | null;
  processorTxId: string | null;
  updatedAt: string;
}

function isRefundStatus(value: string): value is RefundStatus {
  return value === "processing" || value === "completed" || value === "failed";
}

/** The columns of a refund's public object: the refund, its request id as sent, decimals, its payout's progress. */
function viewSelect(db: Kysely<Database>) {
  return (
    db
      .selectFrom("refunds")
      .innerJoin("signed_requests", "signed_requests.request_id", "refunds.request_id")
      // A claim refund has no payout until its payer claims it (product §25): its claim says when it last changed.
      .leftJoin("payouts", "payouts.request_id", "refunds.request_id")
      .leftJoin("refund_claims", "refund_claims.refund_id", "refunds.request_id")
      .innerJoin("currencies", "currencies.ticker", "refunds.currency")
      .selectAll("refunds")
      .select([
        "signed_requests.request_id_sent",
        "currencies.decimals",
        "currencies.symbol",
        "payouts.state as payout_state",
        "payouts.processor_status",
        "payouts.processor_tx_id",
        "payouts.updated_at",
        "refund_claims.updated_at as claim_updated_at",
      ])
  );
}

type ViewRow = Awaited<ReturnType<ReturnType<typeof viewSelect>["execute"]>>[number];

function viewFromRow(r: ViewRow): RefundView {
  assert(isRefundStatus(r.status), `refund ${r.request_id} has a known status`);
  const payoutState = r.payout_state;
  if (payoutState === null) {
    assert(r.claim_updated_at !== null, `refund ${r.request_id} without a payout is a claim refund`);
  } else {
    assert(isPayoutState(payoutState), `payout ${r.request_id} has a known state`);
    // The two are written in one transaction (settleRefund runs inside the payout's settlement).
    assert(publicStatus(payoutState) === r.status, `refund ${r.request_id} is in step with its payout`);
  }
  assert(r.type === "crypto" || r.type === "fiat", `refund ${r.request_id} has a known type`);
  return {
    requestKey: r.request_id,
    merchantId: r.merchant_id,
    invoiceId: r.invoice_id,
    depositId: r.deposit_id,
    type: r.type,
    currency: r.currency,
    ticker: r.symbol ?? r.currency,
    amountMinor: BigInt(r.amount),
    debitCurrency: r.debit_currency,
    debitMinor: BigInt(r.debit_amount),
    toAddress: r.to_address,
    withdrawToSameAddress: Number(r.withdraw_to_same_address) === 1,
    reason: r.reason,
    createdAt: r.created_at,
    requestIdSent: r.request_id_sent,
    decimals: Number(r.decimals),
    status: r.status,
    payoutState,
    processorStatus: r.processor_status,
    processorTxId: r.processor_tx_id,
    updatedAt: r.updated_at ?? (r.claim_updated_at as string),
  };
}

export async function findRefundView(tx: Tx, requestKey: string): Promise<RefundView | null> {
  const r = await viewSelect(tx.db).where("refunds.request_id", "=", requestKey).executeTakeFirst();
  return r ? viewFromRow(r) : null;
}

/** An invoice's refund: the only kind the interface's refund request object shows (its invoice_id is never null). */
export type InvoiceRefundView = RefundView & { invoiceId: string };

export function isInvoiceRefund(view: RefundView): view is InvoiceRefundView {
  return view.invoiceId !== null;
}

/** An invoice's refund by its request key (lowercased); null when none, or when it is a held deposit's. */
export async function findInvoiceRefundView(tx: Tx, requestKey: string): Promise<InvoiceRefundView | null> {
  const view = await findRefundView(tx, requestKey);
  return view !== null && isInvoiceRefund(view) ? view : null;
}

/**
 * The merchant's invoice refund by the id its public object shows (the request id, whatever its
 * case); another merchant's, and a held deposit's refund (its deposit carries it), are null.
 */
export async function findRefundViewForMerchant(
  tx: Tx,
  merchantId: string,
  id: string,
): Promise<InvoiceRefundView | null> {
  const view = await findInvoiceRefundView(tx, id.toLowerCase());
  return view?.merchantId === merchantId ? view : null;
}

export interface RefundListFilter extends PageWindow {
  status?: RefundStatus | undefined;
}

/**
 * A page of the merchant's invoice refunds, newest first, each as its public object needs it. A
 * held deposit's refund is left out: its deposit carries it (product §30).
 */
export async function listRefunds(
  tx: Tx,
  merchantId: string,
  filter: RefundListFilter,
): Promise<Result<Page<InvoiceRefundView>, ListError>> {
  const page = await merchantPage(
    tx,
    {
      table: "refunds",
      idColumn: "request_id",
      columns: { createdAt: "refunds.created_at", id: "refunds.request_id" },
      noun: "a refund",
    },
    merchantId,
    { ...filter, startingAfter: filter.startingAfter?.toLowerCase() },
    viewSelect(tx.db)
      .where("refunds.merchant_id", "=", merchantId)
      .where("refunds.invoice_id", "is not", null)
      .$if(filter.status !== undefined, (qb) => qb.where("refunds.status", "=", filter.status as RefundStatus)),
  );
  if (!page.ok) return page;
  const data = page.value.data.map(viewFromRow);
  assert(data.every(isInvoiceRefund), "the refund list names invoices' refunds only");
  return ok({ data, hasMore: page.value.hasMore });
}

/**
 * Inside the settlement of a refund's payout (settlePayout holds its row): the refund takes the
 * payout's outcome and its invoice leaves `refund_processing` (product §5): `refunded` when the
 * payout completed, back to `completed` when it failed, which allows a new refund. Through
 * applyTransition, so the invoice's callback is recorded in the same transaction.
 */
export async function settleRefund(
  tx: Tx,
  requestKey: string,
  outcome: PayoutOutcome,
  now: string,
  publicBaseUrl: string,
): Promise<void> {
  const refund = await tx.db
    .selectFrom("refunds")
    .select(["invoice_id", "deposit_id", "status"])
    .where("request_id", "=", requestKey)
    .executeTakeFirst();
  assert(refund?.status === "processing", `refund ${requestKey} is processing when its payout settles`);
  if (refund.invoice_id === null) {
    assert(refund.deposit_id !== null, `refund ${requestKey} names an invoice or a deposit`);
    await tx.db.updateTable("refunds").set({ status: outcome }).where("request_id", "=", requestKey).execute();
    if (outcome === "failed") await returnDepositToHold(tx, refund.deposit_id, requestKey, now);
    return;
  }
  // Before the reversal's balance rows: invoice, then balances, the order refund acceptance takes them in.
  const invoice = await lockInvoice(tx, refund.invoice_id);
  assert(invoice !== null, `refund ${requestKey} has its invoice`);
  await tx.db.updateTable("refunds").set({ status: outcome }).where("request_id", "=", requestKey).execute();
  await leaveRefundProcessing(tx, invoice, requestKey, outcome, now, publicBaseUrl);
}

/** The columns of a deposit's refund as its deposit carries it: the claim, the payout, and what the debit sends. */
function depositRefundSelect(db: Kysely<Database>) {
  return (
    db
      .selectFrom("refunds")
      .innerJoin("refund_claims", "refund_claims.refund_id", "refunds.request_id")
      .innerJoin("currencies", "currencies.ticker", "refunds.currency")
      .leftJoin("payouts", "payouts.request_id", "refunds.request_id")
      // What the payer receives is the payouts leg of the debit, exact whatever the entry's fee became since.
      .innerJoin("ledger_movements", (j) =>
        j
          .onRef("ledger_movements.cause_id", "=", "refunds.request_id")
          .on("ledger_movements.cause", "=", "refund")
          .on("ledger_movements.kind", "=", "debit"),
      )
      .innerJoin("ledger_entries", (j) =>
        j
          .onRef("ledger_entries.movement_id", "=", "ledger_movements.id")
          .onRef("ledger_entries.currency", "=", "refunds.currency")
          .on("ledger_entries.account", "=", SYSTEM_ACCOUNTS.payouts),
      )
      .select([
        "refunds.request_id",
        "refunds.deposit_id",
        "refunds.status",
        "refunds.debit_amount",
        "refunds.to_address",
        "refunds.created_at",
        "refund_claims.status as claim_status",
        "refund_claims.expires_at",
        "currencies.decimals",
        "payouts.processor_status",
        "payouts.processor_tx_id",
        "ledger_entries.amount as payout_amount",
      ])
  );
}

type DepositRefundRow = Awaited<ReturnType<ReturnType<typeof depositRefundSelect>["execute"]>>[number];

/** A refund's status as its deposit shows it: the claim's while nobody claimed it or it expired, else the refund's. */
function depositRefundStatus(r: DepositRefundRow): DepositRefundStatus {
  if (r.claim_status === "open") return "awaiting_claim";
  if (r.claim_status === "expired") return "expired";
  assert(isRefundStatus(r.status), `refund ${r.request_id} has a known status`);
  return r.status;
}

function depositRefundFromRow(r: DepositRefundRow): DepositRefundObject {
  const decimals = Number(r.decimals);
  const payout = BigInt(r.payout_amount);
  return {
    id: r.request_id,
    status: depositRefundStatus(r),
    amount: formatAmount(payout, decimals),
    networkFee: formatAmount(BigInt(r.debit_amount) - payout, decimals),
    toAddress: r.to_address,
    claimExpiresAt: r.expires_at,
    payoutProcessorStatus: r.processor_status,
    payoutProcessorTxId: r.processor_tx_id,
    createdAt: r.created_at,
  };
}

/**
 * The latest refund of each of these deposits (product §30), by deposit id: a deposit whose refund
 * failed or expired and that was refunded again shows the new one. Deposits never refunded are absent.
 */
export async function latestDepositRefunds(
  tx: Tx,
  depositIds: readonly string[],
): Promise<Map<string, DepositRefundObject>> {
  const latest = new Map<string, DepositRefundObject>();
  if (depositIds.length === 0) return latest;
  const rows = await depositRefundSelect(tx.db)
    .where("refunds.deposit_id", "in", depositIds)
    .orderBy("refunds.created_at")
    .orderBy("refunds.request_id")
    .execute();
  // Oldest first: each later refund of a deposit replaces the one before.
  for (const r of rows) latest.set(r.deposit_id as string, depositRefundFromRow(r));
  return latest;
}

/** The latest refund of one deposit, or null if it was never refunded. */
export async function latestDepositRefund(tx: Tx, depositId: string): Promise<DepositRefundObject | null> {
  return (await latestDepositRefunds(tx, [depositId])).get(depositId) ?? null;
}

/**
 * Refunds and payouts belong to a request id: the merchant's resolve of a held deposit is the
 * operation (not signed, product §30), so its refund gets a fresh UUID recorded as a completed
 * request, never a merchant's (theirs are the ones they send), and usable by every payout route.
 */
export async function recordDepositRefundRequest(
  tx: Tx,
  deposit: { id: string; merchantId: string },
  requestKey: string,
  now: string,
): Promise<void> {
  await tx.db
    .insertInto("signed_requests")
    .values({
      request_id: requestKey,
      request_id_sent: requestKey,
      merchant_id: deposit.merchantId,
      route: "/public/v1/deposits/{id}/resolve",
      body_hash: createHash("sha256").update(`refund:${deposit.id}`).digest("hex"),
      state: "completed",
      response_status: null,
      response_body: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

/**
 * A deposit's refund that ended without paying out (its payout failed, or its claim expired): the
 * deposit is `held` again (compare-and-set from `refunded`, before the reversal's balance rows, the
 * order the refund took them in), so the merchant decides anew; the caller credits the hold back.
 */
export async function returnDepositToHold(tx: Tx, depositId: string, requestKey: string, now: string): Promise<void> {
  assert(depositTransition("refunded", "held") !== null, "a refunded deposit may be held again");
  const moved = await tx.db
    .updateTable("deposits")
    .set({ status: "held", updated_at: now })
    .where("id", "=", depositId)
    .where("status", "=", "refunded")
    .executeTakeFirst();
  // Only its one live refund moves a deposit out of `refunded`.
  assert(moved.numUpdatedRows === 1n, `deposit ${depositId} goes back to held when refund ${requestKey} ends`);
}

/**
 * After one of the invoice's refunds ended (its payout settled, or its claim expired), the invoice
 * makes the move statusAfterRefund decides (product §5, §25), if any. The invoice must be locked.
 * Through applyTransition, so the invoice's callback is recorded in the same transaction.
 */
export async function leaveRefundProcessing(
  tx: Tx,
  invoice: Invoice,
  requestKey: string,
  outcome: PayoutOutcome,
  now: string,
  publicBaseUrl: string,
): Promise<void> {
  // Whether every live refund completed matters only to a completed refund of an invoice in refund_processing.
  const asks = invoice.status === "refund_processing" && outcome === "completed";
  const allCompleted = asks && (await liveRefundShares(tx, invoice.id)).allCompleted;
  const change = statusAfterRefund(invoice.status, outcome, allCompleted);
  if (change === null) return;
  const moved = await applyTransition(tx, invoice, change.to, change.cause, now, publicBaseUrl);
  // The invoice is locked and only its live refunds move it out of refund_processing.
  assert(moved.ok, `invoice ${invoice.id} leaves refund_processing when refund ${requestKey} settles`);
}

async function catalogCurrency(tx: Tx, ticker: string): Promise<Currency> {
  const currency = await findCurrency(tx, ticker);
  assert(currency !== null, `currency ${ticker} of an invoice is in the catalog`);
  return currency;
}

/**
 * What the refund rules (a whole refund, product §8, and a part, §25) read of the invoice, at the
 * rates its quote fixed (product §22), not today's feeds. `entry`: the entry the payment came on
 * (refundEntryOf), null for the invoice's own.
 */
export async function refundInvoiceFacts(
  tx: Tx,
  invoice: Invoice,
  entry: Currency | null,
): Promise<RefundInvoiceFacts & { currency: Currency; settlement: Currency }> {
  const rates = invoice.quoteRates ?? null;
  const first = await catalogCurrency(tx, invoice.currency);
  const currency = atQuotedRate(entry ?? first, rates);
  const settlement =
    invoice.settlementCurrency === invoice.currency
      ? currency
      : atQuotedRate(await catalogCurrency(tx, invoice.settlementCurrency), rates);
  const incoming = await incomingPaymentsSummary(tx, invoice.id);
  return {
    status: invoice.status,
    currency,
    settlement,
    // In the refunded entry's units: an entry with more decimals than the invoice's precision counts more.
    paidMinor: inUnitsOf(incoming.paidMinor, first.decimals, currency.decimals),
    soleSenderAddress: incoming.soleSenderAddress,
    unsettledPayments: incoming.unsettledCount,
  };
}
