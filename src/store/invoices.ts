// Invoice repository: invoices, their incoming payments, and the one function that changes an invoice's status.
import { type Insertable, type Kysely, type Selectable, sql } from "kysely";
import { newRowId } from "../domain/ids.ts";
import { checkTransition, type InvoiceStatus, type TransitionCause } from "../domain/invoiceStatus.ts";
import {
  type ChainPaymentPlace,
  type IncomingPayment,
  type Invoice,
  type InvoiceType,
  invoiceView,
} from "../domain/invoices.ts";
import { formatDecimal, parseDecimal } from "../domain/money.ts";
import { type PaymentValue, parseQuoteRates, serializeQuoteRates } from "../domain/rates.ts";
import { assert, err, ok, type Result } from "../domain/result.ts";
import { type AmlStatus, summarizePayments } from "../domain/settlement.ts";
import { recordInvoiceEvent } from "./events.ts";
import { type ListError, merchantPage, type Page, type PageWindow } from "./keyset.ts";
import { preparedQuery, preparedStatement } from "./prepared.ts";
import { readThrough } from "./readCache.ts";
import type { Database, InvoicePaymentsTable, InvoicesTable } from "./schema.ts";
import { batchesPer, StatementBatches } from "./statementBatches.ts";
import type { Tx } from "./store.ts";
import { recordPeriodPaid, SUBSCRIPTION_KEY_PREFIX } from "./subscriptions.ts";
import { isStoreUnavailable } from "./unavailable.ts";

export type { IncomingPayment, Invoice } from "../domain/invoices.ts";

/** An invoice with what its answers need: the currency's decimals and every incoming payment. */
export interface LoadedInvoice {
  invoice: Invoice;
  decimals: number;
  payments: IncomingPayment[];
}

function invoiceFromRow(r: Selectable<InvoicesTable>): Invoice {
  return {
    id: r.id,
    merchantId: r.merchant_id,
    idempotencyKey: r.idempotency_key,
    requestHash: r.request_hash,
    type: r.type as InvoiceType,
    status: r.status as InvoiceStatus,
    currency: r.currency,
    settlementCurrency: r.settlement_currency,
    convertCurrency: r.convert_currency,
    amountMinor: BigInt(r.amount),
    finalAmountMinor: BigInt(r.final_amount),
    merchantFeeMinor: BigInt(r.merchant_fee),
    networkAndOtherFeesMinor: BigInt(r.network_and_other_fees),
    merchantReceiveAmountMinor: BigInt(r.merchant_receive_amount),
    callbackUrl: r.callback_url,
    successUrl: r.success_url,
    returnUrl: r.return_url,
    failUrl: r.fail_url,
    orderNo: r.order_no,
    description: r.description,
    apiSource: r.api_source,
    depositAddress: r.deposit_address,
    depositIndex: r.deposit_index === null || r.deposit_index === undefined ? null : Number(r.deposit_index),
    depositFactory: r.deposit_factory ?? null,
    currencyEntry: r.currency_entry ?? null,
    quoteRates: r.quote_rates ? parseQuoteRates(r.quote_rates) : null,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function paymentFromRow(r: InvoicePaymentsTable): IncomingPayment {
  return {
    id: r.id,
    invoiceId: r.invoice_id,
    txId: r.tx_id,
    amountMinor: BigInt(r.amount),
    fromAddress: r.from_address,
    confirmed: r.confirmed === 1,
    amlStatus: r.aml_status as AmlStatus,
    provider: r.provider,
    chain:
      r.network && r.tx_hash && r.block_number !== null && r.block_number !== undefined && r.block_hash
        ? {
            network: r.network,
            txHash: r.tx_hash,
            logIndex: r.log_index ?? null,
            blockNumber: BigInt(r.block_number),
            blockHash: r.block_hash,
          }
        : null,
    late: Number(r.late ?? 0) === 1,
    value: valueFromRow(r),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function valueFromRow(r: InvoicePaymentsTable): PaymentValue | null {
  if (r.value_usd === null || r.value_usd === undefined) return null;
  return {
    valueUsdMinor: BigInt(r.value_usd),
    liveRateUsd: r.live_rate_usd ? parseDecimal(r.live_rate_usd) : null,
    liveValueUsdMinor: r.live_value_usd ? BigInt(r.live_value_usd) : null,
  };
}

/** The stored columns of a payment's value at confirmation. */
function valueColumns(value: PaymentValue | null | undefined) {
  if (!value) return {};
  return {
    value_usd: value.valueUsdMinor.toString(),
    live_rate_usd: value.liveRateUsd === null ? null : formatDecimal(value.liveRateUsd),
    live_value_usd: value.liveValueUsdMinor === null ? null : value.liveValueUsdMinor.toString(),
  };
}

/** The columns an invoice is inserted with, as stored. */
function invoiceRow(invoice: Invoice) {
  return {
    id: invoice.id,
    merchant_id: invoice.merchantId,
    idempotency_key: invoice.idempotencyKey,
    request_hash: invoice.requestHash,
    type: invoice.type,
    status: invoice.status,
    currency: invoice.currency,
    settlement_currency: invoice.settlementCurrency,
    convert_currency: invoice.convertCurrency,
    amount: invoice.amountMinor.toString(),
    final_amount: invoice.finalAmountMinor.toString(),
    merchant_fee: invoice.merchantFeeMinor.toString(),
    network_and_other_fees: invoice.networkAndOtherFeesMinor.toString(),
    merchant_receive_amount: invoice.merchantReceiveAmountMinor.toString(),
    callback_url: invoice.callbackUrl,
    success_url: invoice.successUrl,
    return_url: invoice.returnUrl,
    fail_url: invoice.failUrl,
    order_no: invoice.orderNo,
    description: invoice.description,
    api_source: invoice.apiSource,
    deposit_address: invoice.depositAddress,
    deposit_index: invoice.depositIndex ?? null,
    deposit_factory: invoice.depositFactory ?? null,
    currency_entry: invoice.currencyEntry ?? null,
    quote_rates: invoice.quoteRates ? serializeQuoteRates(invoice.quoteRates) : null,
    expires_at: invoice.expiresAt,
    created_at: invoice.createdAt,
    updated_at: invoice.updatedAt,
  };
}

type InvoiceColumn = keyof ReturnType<typeof invoiceRow>;

/** invoiceRow's columns, in its order: the single and the batch insert name the same ones. */
const INVOICE_COLUMNS: readonly InvoiceColumn[] = Object.keys(
  invoiceRow({
    amountMinor: 0n,
    finalAmountMinor: 0n,
    merchantFeeMinor: 0n,
    networkAndOtherFeesMinor: 0n,
    merchantReceiveAmountMinor: 0n,
    quoteRates: null,
  } as Invoice),
) as InvoiceColumn[];

/** CreateInvoice's insert, compiled once (see prepared.ts). */
const insertInvoiceStatement = preparedStatement(INVOICE_COLUMNS, (db, a) =>
  db
    .insertInto("invoices")
    .values(a as unknown as Insertable<InvoicesTable>)
    .onConflict((oc) => oc.columns(["merchant_id", "idempotency_key"]).doNothing()),
);

/**
 * Inserts a new invoice unless the merchant already has one with the same idempotency key
 * (INSERT ... ON CONFLICT DO NOTHING: on PostgreSQL a unique violation would abort the
 * transaction, and a concurrent insert of the same key waits here for the other to commit).
 * Answers whether this call inserted it.
 */
export async function insertInvoice(tx: Tx, invoice: Invoice): Promise<boolean> {
  const result = await insertInvoiceStatement(tx, invoiceRow(invoice));
  return result.affected > 0n;
}

/**
 * Invoices without an idempotency key, several in one statement (a plain INSERT: nothing cached
 * changes, sharedCache.ts): rows as JSON, typed by the table's own row type.
 */
const insertInvoicesStatement = preparedStatement(["rows"] as const, (db, a) => ({
  compile: () =>
    sql`insert into invoices (${sql.join(INVOICE_COLUMNS.map((c) => sql.id(c)))}) select ${sql.join(
      INVOICE_COLUMNS.map((c) => sql.id(c)),
    )} from jsonb_populate_recordset(null::invoices, ${a.rows}::jsonb)`.compile(db),
}));

/** The most invoices one statement carries, and the most a process keeps waiting for the next one. */
export const INVOICE_BATCH_SIZE = 64;
const INVOICE_QUEUE_LIMIT = 4096;

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * A batch in one statement, its own transaction. If it fails (a row a constraint refuses), each
 * invoice is inserted alone, so that one bad invoice fails only its own request, with its own error.
 */
async function insertInvoices(store: Tx, invoices: Invoice[]): Promise<(Error | null)[]> {
  if (invoices.length > 1) {
    let affected: bigint | null = null;
    try {
      ({ affected } = await insertInvoicesStatement(store, { rows: JSON.stringify(invoices.map(invoiceRow)) }));
    } catch (error) {
      // A lost connection leaves the batch's fate unknown (it may have committed): each request
      // answers 503 as a single insert would, and nothing is inserted again. Otherwise the server
      // refused the statement, nothing of it was written, and each invoice goes alone, below.
      if (isStoreUnavailable(error)) return invoices.map(() => asError(error));
    }
    if (affected !== null) {
      assert(affected === BigInt(invoices.length), "a batch of new invoices inserts every one");
      return invoices.map(() => null);
    }
  }
  return Promise.all(
    invoices.map((invoice) =>
      insertInvoice(store, invoice).then(
        (inserted) => (inserted ? null : new Error(`invoice ${invoice.id} was not inserted`)),
        (error: unknown) => asError(error),
      ),
    ),
  );
}

const invoiceBatches = batchesPer(
  (store: Tx) =>
    new StatementBatches<Invoice, Error | null>(
      { batchSize: INVOICE_BATCH_SIZE, queueLimit: INVOICE_QUEUE_LIMIT },
      (invoices) => insertInvoices(store, invoices),
    ),
);

/**
 * PostgreSQL, an invoice without an idempotency key, outside any transaction (`store` is the
 * store's own handle): inserted in this process's next batch statement (statementBatches.ts), one
 * round trip and one commit shared with the invoices that arrived meanwhile. Answered once committed.
 */
export async function insertInvoiceInBatch(store: Tx, invoice: Invoice): Promise<void> {
  assert(
    store.dialect === "postgres" && invoice.idempotencyKey === null,
    "batched invoices are PostgreSQL's, without idempotency keys",
  );
  const pending = invoiceBatches(store).submit(invoice);
  const failure = pending === null ? await insertInvoices(store, [invoice]).then(([e]) => e) : await pending;
  if (failure) throw failure;
}

/** One query: invoices joined with their currency's decimals and (left) their payments, one row per payment. */
function loadQuery(db: Kysely<Database>) {
  return db
    .selectFrom("invoices as i")
    .innerJoin("currencies as c", "c.ticker", "i.currency")
    .leftJoin("invoice_payments as p", "p.invoice_id", "i.id")
    .selectAll("i")
    .select([
      "c.decimals as currency_decimals",
      "p.id as p_id",
      "p.tx_id as p_tx_id",
      "p.amount as p_amount",
      "p.from_address as p_from_address",
      "p.confirmed as p_confirmed",
      "p.aml_status as p_aml_status",
      "p.provider as p_provider",
      "p.network as p_network",
      "p.tx_hash as p_tx_hash",
      "p.log_index as p_log_index",
      "p.block_number as p_block_number",
      "p.block_hash as p_block_hash",
      "p.late as p_late",
      "p.value_usd as p_value_usd",
      "p.live_rate_usd as p_live_rate_usd",
      "p.live_value_usd as p_live_value_usd",
      "p.created_at as p_created_at",
      "p.updated_at as p_updated_at",
    ]);
}

type LoadRow = Awaited<ReturnType<ReturnType<typeof loadQuery>["execute"]>>[number];

/** Groups joined rows back into invoices, keeping the order in which invoices first appear. */
function groupLoaded(rows: LoadRow[]): LoadedInvoice[] {
  const byId = new Map<string, LoadedInvoice>();
  for (const r of rows) {
    let loaded = byId.get(r.id);
    if (!loaded) {
      loaded = { invoice: invoiceFromRow(r), decimals: Number(r.currency_decimals), payments: [] };
      byId.set(r.id, loaded);
    }
    if (r.p_id !== null) {
      loaded.payments.push(
        paymentFromRow({
          id: r.p_id,
          invoice_id: r.id,
          tx_id: r.p_tx_id as string,
          amount: r.p_amount as string,
          from_address: r.p_from_address,
          confirmed: Number(r.p_confirmed),
          aml_status: r.p_aml_status as string,
          provider: r.p_provider,
          network: r.p_network,
          tx_hash: r.p_tx_hash,
          log_index: r.p_log_index,
          block_number: r.p_block_number,
          block_hash: r.p_block_hash,
          late: r.p_late === null ? 0 : Number(r.p_late),
          value_usd: r.p_value_usd,
          live_rate_usd: r.p_live_rate_usd,
          live_value_usd: r.p_live_value_usd,
          created_at: r.p_created_at as string,
          updated_at: r.p_updated_at as string,
        }),
      );
    }
  }
  return [...byId.values()];
}

/** The merchant's invoice with this id, or null (another merchant's invoice is null too). One query. */
export async function findInvoiceForMerchant(
  tx: Tx,
  merchantId: string,
  invoiceId: string,
): Promise<LoadedInvoice | null> {
  // Cached by id alone (another merchant's id reads as absent): the merchant is checked on the way out.
  const loaded = await readThrough(tx, "invoices", invoiceId, async () => {
    const rows = await invoiceOfMerchantQuery(tx, { merchantId, invoiceId });
    return groupLoaded(rows)[0] ?? null;
  });
  return loaded?.invoice.merchantId === merchantId ? loaded : null;
}

/** GetInvoice's query, compiled once: it runs on every read. */
const invoiceOfMerchantQuery = preparedQuery(["merchantId", "invoiceId"] as const, (db, args) =>
  loadQuery(db)
    .where("i.id", "=", args.invoiceId)
    .where("i.merchant_id", "=", args.merchantId)
    .orderBy("p.created_at")
    .orderBy("p.id"),
);

/** An invoice by id alone, for the payer's hosted page (the id in its URL is the capability). */
export async function findInvoiceById(tx: Tx, invoiceId: string): Promise<LoadedInvoice | null> {
  const rows = await loadQuery(tx.db).where("i.id", "=", invoiceId).orderBy("p.created_at").orderBy("p.id").execute();
  return groupLoaded(rows)[0] ?? null;
}

export async function findInvoiceByIdempotencyKey(
  tx: Tx,
  merchantId: string,
  idempotencyKey: string,
): Promise<LoadedInvoice | null> {
  const rows = await loadQuery(tx.db)
    .where("i.merchant_id", "=", merchantId)
    .where("i.idempotency_key", "=", idempotencyKey)
    .orderBy("p.created_at")
    .orderBy("p.id")
    .execute();
  return groupLoaded(rows)[0] ?? null;
}

/** GetInvoicesByOrderId answers at most this many invoices, the newest (docs/invoices.md). */
export const BY_ORDER_LIMIT = 100;

/**
 * The merchant's newest invoices with this order number, newest first (created_at, then id,
 * descending), at most BY_ORDER_LIMIT: the bound is in the query (the subquery walks the
 * (merchant_id, order_no, created_at) index backwards), so no order number can make the service
 * read, hold or send more.
 */
export async function listInvoicesByOrderNo(tx: Tx, merchantId: string, orderNo: string): Promise<LoadedInvoice[]> {
  const rows = await loadQuery(tx.db)
    .where("i.id", "in", (qb) =>
      qb
        .selectFrom("invoices")
        .select("id")
        .where("merchant_id", "=", merchantId)
        .where("order_no", "=", orderNo)
        .orderBy("created_at", "desc")
        .orderBy("id", "desc")
        .limit(BY_ORDER_LIMIT),
    )
    .orderBy("i.created_at", "desc")
    .orderBy("i.id", "desc")
    .orderBy("p.created_at")
    .orderBy("p.id")
    .execute();
  return groupLoaded(rows);
}

/** GET /public/v1/invoices: a page of the merchant's invoices, newest first, optionally of one status. */
export interface InvoiceListFilter extends PageWindow {
  status?: InvoiceStatus | undefined;
  /** Only the invoices this payment link made. */
  paymentLinkId?: string | undefined;
  /**
   * false: without the abandoned ones (a payment link's invoices that expired with nothing paid);
   * true: only those; undefined: both.
   */
  abandoned?: boolean | undefined;
}

/**
 * A page of the merchant's invoices, newest first (`created_at`, then id, descending), each loaded
 * as GetInvoice answers it. The page's ids come from the (merchant_id, created_at, id) index
 * (migration 011); a status filter is checked on the rows that range yields.
 */
export async function listInvoices(
  tx: Tx,
  merchantId: string,
  filter: InvoiceListFilter,
): Promise<Result<Page<LoadedInvoice>, ListError>> {
  const ids = await merchantPage(
    tx,
    { table: "invoices", idColumn: "id", columns: { createdAt: "created_at", id: "id" }, noun: "an invoice" },
    merchantId,
    filter,
    tx.db
      .selectFrom("invoices")
      .select("id")
      .where("merchant_id", "=", merchantId)
      .$if(filter.status !== undefined, (qb) => qb.where("status", "=", filter.status as InvoiceStatus))
      .$if(filter.paymentLinkId !== undefined, (qb) =>
        qb.where("id", "in", (sub) =>
          sub
            .selectFrom("payment_link_invoices")
            .select("invoice_id")
            .where("link_id", "=", filter.paymentLinkId as string),
        ),
      )
      .$if(filter.abandoned !== undefined, (qb) =>
        qb.where((eb) => {
          const abandoned = eb.and([
            eb("status", "=", "expired"),
            eb("id", "in", eb.selectFrom("payment_link_invoices").select("invoice_id")),
          ]);
          return filter.abandoned === true ? abandoned : eb.not(abandoned);
        }),
      ),
  );
  if (!ids.ok) return ids;
  const page = ids.value;
  if (page.data.length === 0) return ok({ data: [], hasMore: page.hasMore });
  const rows = await loadQuery(tx.db)
    .where(
      "i.id",
      "in",
      page.data.map((r) => r.id),
    )
    .orderBy("i.created_at", "desc")
    .orderBy("i.id", "desc")
    .orderBy("p.created_at")
    .orderBy("p.id")
    .execute();
  return ok({ data: groupLoaded(rows), hasMore: page.hasMore });
}

/**
 * Reads an invoice and, on PostgreSQL, locks its row until the transaction ends (SQLite
 * transactions are serialized already). Every status change of an invoice starts here, so two
 * processes handling events of one invoice take turns. With `merchantId`, another merchant's
 * invoice is null.
 */
export async function lockInvoice(tx: Tx, invoiceId: string, merchantId?: string): Promise<Invoice | null> {
  const r = await tx.db
    .selectFrom("invoices")
    .selectAll()
    .where("id", "=", invoiceId)
    .$if(merchantId !== undefined, (qb) => qb.where("merchant_id", "=", merchantId as string))
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  return r ? invoiceFromRow(r) : null;
}

export async function listPayments(tx: Tx, invoiceId: string): Promise<IncomingPayment[]> {
  const rows = await tx.db
    .selectFrom("invoice_payments")
    .selectAll()
    .where("invoice_id", "=", invoiceId)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map(paymentFromRow);
}

export interface NewPayment {
  invoiceId: string;
  txId: string;
  amountMinor: bigint;
  fromAddress: string | null;
  confirmed: boolean;
  amlStatus: AmlStatus;
  provider: string | null;
  chain?: ChainPaymentPlace | null;
  late?: boolean;
  /** A payment recorded confirmed: its value at confirmation. */
  value?: PaymentValue | null;
}

/** Records one incoming payment; (invoice, tx id) is unique, so a transaction is never counted twice. */
export async function insertPayment(tx: Tx, payment: NewPayment, now: string): Promise<IncomingPayment> {
  const row: InvoicePaymentsTable = {
    id: newRowId(),
    invoice_id: payment.invoiceId,
    tx_id: payment.txId,
    amount: payment.amountMinor.toString(),
    from_address: payment.fromAddress,
    confirmed: payment.confirmed ? 1 : 0,
    aml_status: payment.amlStatus,
    provider: payment.provider,
    ...(payment.chain
      ? {
          network: payment.chain.network,
          tx_hash: payment.chain.txHash,
          log_index: payment.chain.logIndex,
          block_number: payment.chain.blockNumber.toString(),
          block_hash: payment.chain.blockHash,
        }
      : {}),
    ...(payment.late ? { late: 1 } : {}),
    ...(payment.confirmed ? valueColumns(payment.value) : {}),
    created_at: now,
    updated_at: now,
  };
  await tx.db.insertInto("invoice_payments").values(row).execute();
  return paymentFromRow(row);
}

/** Marks a payment confirmed, with its USD value at this moment (product §22). */
export async function confirmPayment(
  tx: Tx,
  paymentId: string,
  now: string,
  value: PaymentValue | null,
): Promise<void> {
  await tx.db
    .updateTable("invoice_payments")
    .set({ confirmed: 1, updated_at: now, ...valueColumns(value) })
    .where("id", "=", paymentId)
    .execute();
}

/** One payment's AML status, only from `from` (so of two concurrent decisions the second changes nothing). */
export async function setPaymentAmlStatus(
  tx: Tx,
  paymentId: string,
  from: AmlStatus,
  to: AmlStatus,
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("invoice_payments")
    .set({ aml_status: to, updated_at: now })
    .where("id", "=", paymentId)
    .where("aml_status", "=", from)
    .execute();
}

/** A payment that waited for screening takes what screening made of it (domain/settlement.ts screenedPayment); only while it waits. */
export async function markScreened(
  tx: Tx,
  paymentId: string,
  screened: { amlStatus: AmlStatus; reason: string | null },
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("invoice_payments")
    .set({
      aml_status: screened.amlStatus,
      screening_reason: screened.reason,
      screen_after: null,
      updated_at: now,
    })
    .where("id", "=", paymentId)
    .where("aml_status", "=", "unscreened")
    .execute();
}

/** Marks an invoice as changed without a status change (a payment arrived); optionally names its card provider. */
export async function touchInvoice(tx: Tx, invoiceId: string, now: string, apiSource?: string): Promise<void> {
  await tx.db
    .updateTable("invoices")
    .set({ updated_at: now, ...(apiSource === undefined ? {} : { api_source: apiSource }) })
    .where("id", "=", invoiceId)
    .execute();
}

/** Those of `invoiceIds` a payment link made (product §25). */
export async function linkInvoiceIds(tx: Tx, invoiceIds: readonly string[]): Promise<Set<string>> {
  if (invoiceIds.length === 0) return new Set();
  const rows = await tx.db
    .selectFrom("payment_link_invoices")
    .select("invoice_id")
    .where("invoice_id", "in", [...invoiceIds])
    .execute();
  return new Set(rows.map((r) => r.invoice_id));
}

export type TransitionError = "transition_refused" | "status_changed";

/**
 * THE way an invoice's status changes. It refuses anything outside the state machine table, and
 * updates only if the status is still the one the caller read (`WHERE status = from`), so a
 * concurrent change is detected instead of overwritten. Callers lock the invoice first
 * (lockInvoice). Anything that must happen atomically with every status change belongs here.
 */
export async function applyTransition(
  tx: Tx,
  invoice: Invoice,
  to: InvoiceStatus,
  cause: TransitionCause,
  now: string,
  publicBaseUrl: string,
): Promise<Result<Invoice, TransitionError>> {
  const moved = await setStatus(tx, invoice, to, cause, now);
  if (!moved.ok) return moved;
  // Events (product §§11, 15): recorded with the change, and queued to the invoice's callback_url if it has one.
  const currency = await tx.db
    .selectFrom("currencies")
    .select("decimals")
    .where("ticker", "=", moved.value.currency)
    .executeTakeFirstOrThrow();
  const view = invoiceView(moved.value, currency.decimals, await listPayments(tx, moved.value.id), publicBaseUrl);
  await recordInvoiceEvent(tx, view, now);
  // A subscription's period is paid with its invoice's completion, in the same transaction (product §29).
  // Only the schedule's invoices carry its idempotency key: no lookup for any other invoice's completion.
  if (to === "completed" && invoice.idempotencyKey?.startsWith(SUBSCRIPTION_KEY_PREFIX)) {
    await recordPeriodPaid(tx, invoice.id, { now, publicBaseUrl });
  }
  return moved;
}

/**
 * The status change alone, without its event: only for a change nobody is told of (a payment
 * link's invoice that expired with nothing paid, product §25). Every other change goes through
 * applyTransition.
 */
export async function setStatus(
  tx: Tx,
  invoice: Invoice,
  to: InvoiceStatus,
  cause: TransitionCause,
  now: string,
): Promise<Result<Invoice, TransitionError>> {
  const allowed = checkTransition(invoice.status, to, cause);
  if (!allowed.ok) return allowed;
  const result = await tx.db
    .updateTable("invoices")
    // A new status is a new situation for the expiry worker, so a previous deferral is dropped.
    .set({ status: to, updated_at: now, expiry_deferred: 0 })
    .where("id", "=", invoice.id)
    .where("status", "=", invoice.status)
    .executeTakeFirst();
  if (result.numUpdatedRows !== 1n)
    return err("status_changed", `invoice ${invoice.id} is no longer ${invoice.status}`);
  return ok({ ...invoice, status: to, updatedAt: now });
}

export interface IncomingPaymentsSummary {
  /** Number of incoming transactions, whatever their state. */
  count: number;
  /** `paid_amount` in minor units of the invoice currency (blocked payments excluded). */
  paidMinor: bigint;
  /** Confirmed payments not flagged or blocked by screening. */
  settledMinor: bigint;
  /** Payments in paid_amount that are not settled yet. */
  unsettledCount: number;
  /** Distinct sender addresses, in order of arrival. */
  senderAddresses: string[];
  /** The sender address when the invoice has exactly one incoming transaction and it has one; else null. */
  soleSenderAddress: string | null;
}

export function summarizeIncoming(payments: readonly IncomingPayment[]): IncomingPaymentsSummary {
  const { paidMinor, settledMinor, unsettledCount } = summarizePayments(payments);
  const senderAddresses: string[] = [];
  for (const p of payments) {
    if (p.fromAddress !== null && !senderAddresses.includes(p.fromAddress)) senderAddresses.push(p.fromAddress);
  }
  const only = payments.length === 1 ? payments[0] : undefined;
  return {
    count: payments.length,
    paidMinor,
    settledMinor,
    unsettledCount,
    senderAddresses,
    soleSenderAddress: only?.fromAddress ?? null,
  };
}

/** What refunds need to know about an invoice's incoming transactions. */
export async function incomingPaymentsSummary(tx: Tx, invoiceId: string): Promise<IncomingPaymentsSummary> {
  return summarizeIncoming(await listPayments(tx, invoiceId));
}

/**
 * Claims up to `limit` invoices whose expiry is due, oldest first. On PostgreSQL the rows stay
 * locked until the transaction ends and rows another process holds are skipped (FOR UPDATE SKIP
 * LOCKED), so concurrent workers share the work without overlap.
 */
export async function claimDueInvoices(tx: Tx, now: string, limit: number): Promise<Invoice[]> {
  const rows = await tx.db
    .selectFrom("invoices")
    .selectAll()
    .where("status", "in", ["pending", "processing"])
    .where("expiry_deferred", "=", 0)
    .where("expires_at", "<=", now)
    // An invoice with a deposit address expires by the chain's clock (product §19): only once its
    // network's scanner has passed a block stamped after expires_at, so a payment in time is
    // never late because the scanner was slow or stopped. Only live EVM invoices have a deposit
    // index or factory; a sandbox invoice's address is random and follows the wall clock.
    .where((eb) =>
      eb.or([
        eb.and([eb("deposit_index", "is", null), eb("deposit_factory", "is", null)]),
        eb(
          "expires_at",
          "<",
          eb
            .selectFrom("currencies")
            .innerJoin("networks", "networks.name", "currencies.network")
            .select(sql<string | null>`networks.scanned_time`.as("scanned_time"))
            .whereRef("currencies.ticker", "=", "invoices.currency")
            .limit(1),
        ),
      ]),
    )
    .orderBy("expires_at")
    .orderBy("id")
    .limit(limit)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate().skipLocked())
    .execute();
  return rows.map(invoiceFromRow);
}

/** Payments of several invoices at once, grouped by invoice id. */
export async function paymentsOf(tx: Tx, invoiceIds: readonly string[]): Promise<Map<string, IncomingPayment[]>> {
  const grouped = new Map<string, IncomingPayment[]>(invoiceIds.map((id) => [id, []]));
  if (invoiceIds.length === 0) return grouped;
  const rows = await tx.db
    .selectFrom("invoice_payments")
    .selectAll()
    .where("invoice_id", "in", [...invoiceIds])
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  for (const r of rows) grouped.get(r.invoice_id)?.push(paymentFromRow(r));
  return grouped;
}

/** Leaves a due invoice to its confirmations: the expiry worker does not pick it again while its status holds. */
export async function deferExpiry(tx: Tx, invoice: Invoice): Promise<void> {
  // Not a change the merchant sees, so updated_at stays.
  await tx.db
    .updateTable("invoices")
    .set({ expiry_deferred: 1 })
    .where("id", "=", invoice.id)
    .where("status", "=", invoice.status)
    .execute();
}
