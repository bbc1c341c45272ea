// Use cases of payment links (product §25): the merchant creates, lists, reads and deactivates links; a payer's Pay on /l/{id} makes one invoice per browser session, throttled and bounded.

import { randomBytes } from "node:crypto";
import type { CallbackUrlError } from "../domain/callbackUrl.ts";
import type { Currency } from "../domain/currencies.ts";
import { newRowId } from "../domain/ids.ts";
import { isInvoiceStatus, isPayable } from "../domain/invoiceStatus.ts";
import { invoiceUrl } from "../domain/invoices.ts";
import { type AmountError, formatAmount, parseAmount } from "../domain/money.ts";
import { assert, ok, type Result } from "../domain/result.ts";
import { findCurrency } from "../store/currencies.ts";
import type { LoadedInvoice } from "../store/invoices.ts";
import { type ListError, merchantPage, type Page, type PageWindow } from "../store/keyset.ts";
import { findMerchant } from "../store/merchants.ts";
import type { PaymentLinksTable } from "../store/schema.ts";
import { nowIso, type Store, type Tx } from "../store/store.ts";
import { callbackUrlRefusal } from "./callbackUrlInput.ts";
import type { ServiceContext } from "./context.ts";
import { type CreateInvoiceRefusal, createInvoiceFor } from "./createInvoice.ts";
import { type Refusal, refuse, withRefusals } from "./refusal.ts";
import { reserve, type ThrottleRule } from "./throttles.ts";

/** The public object of a payment link: amounts as plain decimals of its currency, `url` the payer's link. */
export interface PaymentLinkObject {
  id: string;
  url: string;
  currency: string;
  amount: string | null;
  min_amount: string | null;
  max_amount: string | null;
  description: string | null;
  callback_url: string | null;
  success_url: string | null;
  return_url: string | null;
  fail_url: string | null;
  active: boolean;
  created_at: string;
  updated_at: string;
}

export interface PaymentLinkInput {
  currency: string;
  amount?: string | undefined;
  minAmount?: string | undefined;
  maxAmount?: string | undefined;
  description?: string | undefined;
  callbackUrl?: string | undefined;
  successUrl?: string | undefined;
  returnUrl?: string | undefined;
  failUrl?: string | undefined;
  active?: boolean | undefined;
}

export type PaymentLinkRefusal = "unknown_currency" | "payment_link_amount_invalid" | AmountError | CallbackUrlError;

export function paymentLinkUrl(publicBaseUrl: string, id: string): string {
  return `${publicBaseUrl}/l/${id}`;
}

function amountOrNull(minor: string | null, decimals: number): string | null {
  return minor === null ? null : formatAmount(BigInt(minor), decimals);
}

export function paymentLinkObject(row: PaymentLinksTable, decimals: number, publicBaseUrl: string): PaymentLinkObject {
  return {
    id: row.id,
    url: paymentLinkUrl(publicBaseUrl, row.id),
    currency: row.currency,
    amount: amountOrNull(row.amount, decimals),
    min_amount: amountOrNull(row.min_amount, decimals),
    max_amount: amountOrNull(row.max_amount, decimals),
    description: row.description,
    callback_url: row.callback_url,
    success_url: row.success_url,
    return_url: row.return_url,
    fail_url: row.fail_url,
    active: Number(row.active) === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function parseField(value: string, currency: Currency, pointer: string): bigint {
  const parsed = parseAmount(value, currency.decimals);
  if (parsed.ok) return parsed.value;
  const detail: Record<AmountError, string> = {
    invalid_amount: 'must be a plain decimal string such as "25.5"',
    amount_not_positive: "must be positive",
    amount_too_precise: `has more fraction digits than ${currency.ticker} has (${currency.decimals})`,
  };
  return refuse(parsed.error, `${pointer.slice(1)} ${detail[parsed.error]}.`, pointer);
}

/** A fixed amount, or bounds the payer chooses within (both given, minimum at most maximum). */
function linkAmounts(input: PaymentLinkInput, currency: Currency) {
  const bounded = input.minAmount !== undefined || input.maxAmount !== undefined;
  if (
    (input.amount === undefined) === !bounded ||
    (bounded && (input.minAmount === undefined || input.maxAmount === undefined))
  ) {
    refuse(
      "payment_link_amount_invalid",
      "Send either amount (a fixed price) or both minAmount and maxAmount (the payer chooses).",
      "/",
    );
  }
  if (input.amount !== undefined)
    return { amount: parseField(input.amount, currency, "/amount"), min: null, max: null };
  const min = parseField(input.minAmount as string, currency, "/minAmount");
  const max = parseField(input.maxAmount as string, currency, "/maxAmount");
  if (min > max) refuse("payment_link_amount_invalid", "minAmount must not be above maxAmount.", "/minAmount");
  return { amount: null, min, max };
}

async function linkCurrency(tx: Tx, ticker: string): Promise<Currency> {
  const currency = await findCurrency(tx, ticker);
  if (currency === null) return refuse("unknown_currency", `${ticker} is not a currency of the catalog.`, "/currency");
  return currency;
}

/** Creates a payment link of the merchant; a refusal changes nothing. */
export async function createPaymentLink(
  ctx: ServiceContext,
  merchantId: string,
  input: PaymentLinkInput,
  /** Runs in the creating transaction (the dashboard's audit row commits with the link). */
  alongside?: (tx: Tx, link: PaymentLinkObject) => Promise<unknown>,
): Promise<{ ok: true; value: PaymentLinkObject } | { ok: false; refusal: Refusal<PaymentLinkRefusal> }> {
  // Resolving the callback host is network I/O: checked before the transaction, as CreateInvoice does.
  if (input.callbackUrl !== undefined) {
    const refused = await callbackUrlRefusal(input.callbackUrl, ctx.config.serviceMode, "/callbackUrl");
    if (refused !== null) return { ok: false, refusal: refused };
  }
  return withRefusals<PaymentLinkObject, PaymentLinkRefusal>(() =>
    ctx.store.transaction(async (tx) => {
      const currency = await linkCurrency(tx, input.currency);
      const amounts = linkAmounts(input, currency);
      const now = nowIso();
      const row: PaymentLinksTable = {
        id: newRowId(),
        merchant_id: merchantId,
        currency: currency.ticker,
        amount: amounts.amount?.toString() ?? null,
        min_amount: amounts.min?.toString() ?? null,
        max_amount: amounts.max?.toString() ?? null,
        description: input.description ?? null,
        callback_url: input.callbackUrl ?? null,
        success_url: input.successUrl ?? null,
        return_url: input.returnUrl ?? null,
        fail_url: input.failUrl ?? null,
        active: input.active === false ? 0 : 1,
        created_at: now,
        updated_at: now,
      };
      await tx.db.insertInto("payment_links").values(row).execute();
      const link = paymentLinkObject(row, currency.decimals, ctx.config.publicBaseUrl);
      await alongside?.(tx, link);
      return link;
    }),
  );
}

async function withDecimals(tx: Tx, row: PaymentLinksTable, publicBaseUrl: string): Promise<PaymentLinkObject> {
  const currency = await findCurrency(tx, row.currency);
  assert(currency !== null, `payment link ${row.id} has its currency`);
  return paymentLinkObject(row, currency.decimals, publicBaseUrl);
}

/** The merchant's link; another merchant's is null, as an unknown one. */
export async function getPaymentLink(ctx: ServiceContext, merchantId: string, id: string) {
  const row = await ctx.store.db
    .selectFrom("payment_links")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .executeTakeFirst();
  return row ? withDecimals(ctx.store, row, ctx.config.publicBaseUrl) : null;
}

/** A page of the merchant's links, newest first. */
export async function listPaymentLinks(
  ctx: ServiceContext,
  merchantId: string,
  window: PageWindow,
): Promise<Result<Page<PaymentLinkObject>, ListError>> {
  const page = await merchantPage(
    ctx.store,
    { table: "payment_links", idColumn: "id", columns: { createdAt: "created_at", id: "id" }, noun: "a payment link" },
    merchantId,
    window,
    ctx.store.db.selectFrom("payment_links").selectAll().where("merchant_id", "=", merchantId),
  );
  if (!page.ok) return page;
  const data = [];
  for (const row of page.value.data) data.push(await withDecimals(ctx.store, row, ctx.config.publicBaseUrl));
  return ok({ data, hasMore: page.value.hasMore });
}

/** Activates or deactivates the merchant's link; null when it has none with this id. */
export async function setPaymentLinkActive(
  ctx: ServiceContext,
  merchantId: string,
  id: string,
  active: boolean,
  alongside?: (tx: Tx) => Promise<unknown>,
) {
  return ctx.store.transaction(async (tx) => {
    const row = await tx.db
      .updateTable("payment_links")
      .set({ active: active ? 1 : 0, updated_at: nowIso() })
      .where("id", "=", id)
      .where("merchant_id", "=", merchantId)
      .returningAll()
      .executeTakeFirst();
    if (!row) return null;
    await alongside?.(tx);
    return withDecimals(tx, row, ctx.config.publicBaseUrl);
  });
}

/** At most this many invoices of one link are listed (newest first). */
export const LINK_INVOICES_LIMIT = 100;

/** The invoices the merchant's link made, newest first, as ids and times (GetInvoice reads each); null for no such link. */
export async function listLinkInvoices(ctx: ServiceContext, merchantId: string, id: string) {
  const link = await getPaymentLink(ctx, merchantId, id);
  if (link === null) return null;
  const rows = await ctx.store.db
    .selectFrom("payment_link_invoices")
    .innerJoin("invoices", "invoices.id", "payment_link_invoices.invoice_id")
    .select([
      "invoices.id",
      "invoices.status",
      "invoices.amount",
      "invoices.currency",
      "payment_link_invoices.created_at",
    ])
    .where("payment_link_invoices.link_id", "=", id)
    .orderBy("payment_link_invoices.created_at", "desc")
    .limit(LINK_INVOICES_LIMIT)
    .execute();
  // Every invoice of a link is in the link's currency: one catalog read formats them all.
  const currency = await findCurrency(ctx.store, link.currency);
  assert(currency !== null, `payment link ${id} has its currency`);
  return rows.map((r) => ({ ...r, amount: formatAmount(BigInt(r.amount), currency.decimals) }));
}

/** The merchant as the link's page shows it: its name and logo, and whether it may take payments. */
export interface LinkMerchant {
  name: string | null;
  logo: string | null;
  active: boolean;
}

/** What a payer's visit to /l/{id} leads to. */
export type LinkVisit =
  | { kind: "not_found" }
  | { kind: "inactive"; link: PaymentLinkObject; merchant: LinkMerchant }
  /** The merchant is suspended: the link takes no payment for now. */
  | { kind: "suspended"; link: PaymentLinkObject; merchant: LinkMerchant }
  /** The page with the price (or the amount field) and the Pay button; `error` why the last amount was refused. */
  | { kind: "page"; link: PaymentLinkObject; merchant: LinkMerchant; error: string | null }
  /** Too many invoices through this link or from this address: nothing was made. */
  | { kind: "busy"; link: PaymentLinkObject; merchant: LinkMerchant; retryAfterSeconds: number }
  /** `session`: the browser session the invoice was made for, when it is new (the answer sets its cookie). */
  | { kind: "invoice"; invoiceUrl: string; session?: string }
  /** CreateInvoice refused the link's invoice: nothing was made. */
  | { kind: "refused"; refusal: Refusal<CreateInvoiceRefusal> };

/** Who presses Pay: the browser session (its cookie, or null) and the client address (TRUST_PROXY's). */
export interface LinkVisitor {
  session: string | null;
  address: string;
}

/** Retry-After of a link at its open-invoice bound, at most this long (its oldest open invoice may live for days). */
const BUSY_RETRY_MAX_SECONDS = 3600;

async function findLink(store: Store, id: string) {
  return store.db.selectFrom("payment_links").selectAll().where("id", "=", id).executeTakeFirst();
}

/** The link, its merchant and the session's invoice from it; or the answer that needs nothing more. */
async function readVisit(ctx: ServiceContext, id: string, session: string | null) {
  const row = await findLink(ctx.store, id);
  if (!row) return { done: { kind: "not_found" } as LinkVisit };
  const link = await withDecimals(ctx.store, row, ctx.config.publicBaseUrl);
  const m = await findMerchant(ctx.store, row.merchant_id);
  const merchant = { name: m?.merchantName ?? null, logo: m?.logo ?? null, active: m?.status === "active" };
  if (!link.active) return { done: { kind: "inactive", link, merchant } as LinkVisit };
  if (!merchant.active) return { done: { kind: "suspended", link, merchant } as LinkVisit };
  if (session !== null) {
    const made = await ctx.store.db
      .selectFrom("payment_link_invoices")
      .innerJoin("invoices", "invoices.id", "payment_link_invoices.invoice_id")
      .select(["payment_link_invoices.invoice_id", "invoices.status", "invoices.expires_at"])
      .where("payment_link_invoices.link_id", "=", id)
      .where("payment_link_invoices.session", "=", session)
      .executeTakeFirst();
    if (made && stillOpen(made)) {
      return { done: { kind: "invoice", invoiceUrl: invoiceUrl(ctx.config.publicBaseUrl, made.invoice_id) } };
    }
    // The session's invoice ended (paid, expired, failed): the browser may pay through the link again.
    if (made) return { row, link, merchant, spent: true };
  }
  return { row, link, merchant, spent: false };
}

/** An invoice a payer returning to its link goes back to: still taking payments, and not past its expiry. */
function stillOpen(invoice: { status: string; expires_at: string | null }): boolean {
  if (!isInvoiceStatus(invoice.status) || !isPayable(invoice.status)) return false;
  return invoice.status !== "pending" || invoice.expires_at === null || invoice.expires_at > nowIso();
}

/**
 * GET /l/{id}: never makes an invoice (a link previewer or mail scanner only looks). A browser
 * session that already has an invoice from the link goes back to it; any other gets the page.
 */
export async function showPaymentLink(ctx: ServiceContext, id: string, session: string | null): Promise<LinkVisit> {
  const read = await readVisit(ctx, id, session);
  if ("done" in read) return read.done as LinkVisit;
  return { kind: "page", link: read.link, merchant: read.merchant, error: null };
}

/** The throttles of invoice creation through links (product §18): per client address and per link. */
function linkRules(ctx: ServiceContext, id: string, address: string): ThrottleRule[] {
  return [
    { subject: `link-invoice:address:${address}`, limit: ctx.config.linkInvoicesPerAddressPerMinute, windowMs: 60_000 },
    { subject: `link-invoice:link:${id}`, limit: ctx.config.linkInvoicesPerLinkPerMinute, windowMs: 60_000 },
  ];
}

/** The amount of the invoice as a decimal: the link's fixed one, or `amount` if it is within the bounds; else null. */
async function chosenAmount(
  ctx: ServiceContext,
  row: PaymentLinksTable,
  link: PaymentLinkObject,
  amount: string | null,
) {
  if (link.amount !== null) return link.amount;
  if (amount === null) return null;
  const currency = await findCurrency(ctx.store, row.currency);
  assert(currency !== null, `payment link ${row.id} has its currency`);
  const parsed = parseAmount(amount.trim(), currency.decimals);
  const within =
    parsed.ok && parsed.value >= BigInt(row.min_amount ?? "0") && parsed.value <= BigInt(row.max_amount ?? "0");
  return parsed.ok && within ? formatAmount(parsed.value, currency.decimals) : null;
}

/**
 * The link's open unpaid invoices (pending, not yet due), counted up to `bound`; and the seconds
 * until the first of them is due. Read through `tx`: inside the creating transaction after the
 * link's row lock, the count includes every invoice committed before.
 */
export async function openLinkInvoices(tx: Tx, id: string, bound: number, nowMs = Date.now()) {
  const now = new Date(nowMs).toISOString();
  const open = await tx.db
    .selectFrom("payment_link_invoices")
    .innerJoin("invoices", "invoices.id", "payment_link_invoices.invoice_id")
    .select("invoices.expires_at")
    .where("payment_link_invoices.link_id", "=", id)
    .where("invoices.status", "=", "pending")
    .where("invoices.expires_at", ">", now)
    .limit(bound)
    .execute();
  const firstDue = open.reduce<string | null>(
    (first, r) => (r.expires_at !== null && (first === null || r.expires_at < first) ? r.expires_at : first),
    null,
  );
  const seconds = firstDue === null ? 60 : Math.ceil((Date.parse(firstDue) - nowMs) / 1000);
  return { count: open.length, retryAfterSeconds: Math.min(BUSY_RETRY_MAX_SECONDS, Math.max(1, seconds)) };
}

/** Thrown inside the creating transaction when the link is at its bound: the new invoice rolls back. */
class LinkAtBound {
  constructor(readonly retryAfterSeconds: number) {}
}

/**
 * POST /l/{id}: the Pay button. The session's invoice from the link if it has one; else, once the
 * attempt is counted against the client address and the link (before anything is evaluated), a new
 * invoice (the fixed amount, or `amount` within the bounds), unless the link already has
 * LINK_OPEN_INVOICES open unpaid ones. That bound is counted inside the creating transaction under
 * the link's row lock (PostgreSQL; SQLite serializes writers), so it holds for parallel visits in
 * any number of processes. Idempotent per session: the invoice idempotency key is
 * `payment-link:{id}:{session}`, so concurrent visits of one session converge on one invoice.
 */
export async function payThroughLink(
  ctx: ServiceContext,
  id: string,
  visitor: LinkVisitor,
  amount: string | null,
): Promise<LinkVisit> {
  const read = await readVisit(ctx, id, visitor.session);
  if ("done" in read) return read.done as LinkVisit;
  const { row, link, merchant } = read;
  // A browser without a session, or whose invoice from the link ended, gets a new session with its new invoice.
  const session = read.spent || visitor.session === null ? randomBytes(16).toString("hex") : visitor.session;
  const reserved = await reserve(ctx.store, linkRules(ctx, id, visitor.address));
  if (!reserved.ok) return { kind: "busy", link, merchant, retryAfterSeconds: reserved.retryAfterSeconds };
  const chosen = await chosenAmount(ctx, row, link, amount);
  if (chosen === null) return { kind: "page", link, merchant, error: "amount_out_of_bounds" };
  const bound = ctx.config.linkOpenInvoices;
  // A plain read first: a link at its bound refuses without writing anything.
  const before = await openLinkInvoices(ctx.store, id, bound);
  if (before.count >= bound) return { kind: "busy", link, merchant, retryAfterSeconds: before.retryAfterSeconds };
  try {
    const created = await createInvoiceFor(ctx, row.merchant_id, linkInvoiceBody(row, chosen, session), (tx, made) =>
      recordLinkInvoice(tx, row.id, session, made, bound),
    );
    if (!created.ok) return { kind: "refused", refusal: created.refusal };
    const url = invoiceUrl(ctx.config.publicBaseUrl, created.value.invoice.id);
    return { kind: "invoice", invoiceUrl: url, ...(session !== visitor.session ? { session } : {}) };
  } catch (error) {
    if (error instanceof LinkAtBound)
      return { kind: "busy", link, merchant, retryAfterSeconds: error.retryAfterSeconds };
    throw error;
  }
}

function linkInvoiceBody(row: PaymentLinksTable, amount: string, session: string) {
  return {
    currency: row.currency,
    amount,
    idempotencyKey: `payment-link:${row.id}:${session}`,
    ...(row.description !== null ? { description: row.description } : {}),
    ...(row.callback_url !== null ? { callbackUrl: row.callback_url } : {}),
    ...(row.success_url !== null ? { success_url: row.success_url } : {}),
    ...(row.return_url !== null ? { return_url: row.return_url } : {}),
    ...(row.fail_url !== null ? { fail_url: row.fail_url } : {}),
  };
}

/** In the creating transaction: the invoice is the session's from the link, unless the link is then over its bound. */
async function recordLinkInvoice(tx: Tx, linkId: string, session: string, made: LoadedInvoice, bound: number) {
  // Orders the link's concurrent creations on PostgreSQL; each then counts what the others committed.
  await tx.db
    .selectFrom("payment_links")
    .select("id")
    .where("id", "=", linkId)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  await tx.db
    .insertInto("payment_link_invoices")
    .values({ link_id: linkId, session, invoice_id: made.invoice.id, created_at: made.invoice.createdAt })
    .onConflict((oc) => oc.doNothing())
    .execute();
  const open = await openLinkInvoices(tx, linkId, bound + 1);
  if (open.count > bound) throw new LinkAtBound(open.retryAfterSeconds);
}
