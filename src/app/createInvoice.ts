// Create an invoice and estimate its fees (CreateInvoice, EstimateFees): one pricing for both, the idempotency key and the transaction.
import { type Static, Type } from "typebox";
import type { CallbackUrlError } from "../domain/callbackUrl.ts";
import type { Currency } from "../domain/currencies.ts";
import { inUnitsOf, isFiat, precisionOf, pricedOver, symbolOf } from "../domain/currencies.ts";
import { type FeeEstimate, feeEstimate, type InvoicePricing, priceInvoice } from "../domain/fees.ts";
import { factoryAddress, invoiceDepositAddress } from "../domain/forwarders.ts";
import { newRowId } from "../domain/ids.ts";
import {
  DEFAULT_INVOICE_TYPE,
  type ExpiryError,
  type InvoiceAmountError,
  parseInvoiceAmount,
  requestFingerprint,
  resolveExpiry,
  sandboxDepositAddress,
} from "../domain/invoices.ts";
import { convert, parseDecimal } from "../domain/money.ts";
import { type PaymentRail, type PaymentRails, paymentRail } from "../domain/paymentRails.ts";
import { atQuotedRate, type QuoteRates } from "../domain/rates.ts";
import { invariantViolation } from "../domain/result.ts";
import { HttpUrl } from "../domain/shapes.ts";
import { entriesOf, findCurrency, resolveCurrencyName } from "../store/currencies.ts";
import {
  findInvoiceByIdempotencyKey,
  type Invoice,
  insertInvoice,
  insertInvoiceInBatch,
  type LoadedInvoice,
} from "../store/invoices.ts";
import { findMerchant, type Merchant } from "../store/merchants.ts";
import type { Tx } from "../store/store.ts";
import { callbackUrlRefusal } from "./callbackUrlInput.ts";
import type { ServiceContext } from "./context.ts";
import { currentRails } from "./rails.ts";
import { type Outcome, refuse, refuseWith, withRefusals } from "./refusal.ts";

export const AmountInput = Type.Union([Type.Number(), Type.String({ minLength: 1, maxLength: 100 })], {
  description: 'A JSON number, or a plain decimal string such as "100.5"',
});
const Ticker = Type.String({ minLength: 1, maxLength: 20, description: "A catalog ticker" });
/** Absolute http(s) URLs only: the hosted page links to the redirect URLs, and callbacks are HTTP. */
const InvoiceType = Type.Union([Type.Literal("b2b"), Type.Literal("b2c")], { description: "Default b2c" });
const OrderNo = Type.String({ minLength: 1, maxLength: 255 });
const Description = Type.String({ maxLength: 1000 });

export const CreateInvoiceBody = Type.Object(
  {
    currency: Ticker,
    amount: AmountInput,
    idempotencyKey: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: "Per merchant; never expires" }),
    ),
    type: Type.Optional(InvoiceType),
    order_no: Type.Optional(OrderNo),
    description: Type.Optional(Description),
    autoconvert: Type.Optional(Ticker),
    callbackUrl: Type.Optional(HttpUrl),
    success_url: Type.Optional(HttpUrl),
    return_url: Type.Optional(HttpUrl),
    fail_url: Type.Optional(HttpUrl),
    expiresAt: Type.Optional(
      Type.String({
        maxLength: 64,
        description: "RFC 3339 with offset, in the future, at most 30 days ahead; default 60 minutes",
      }),
    ),
  },
  { additionalProperties: false },
);

export const EstimateFeesBody = Type.Object(
  {
    currency: Ticker,
    amount: AmountInput,
    type: Type.Optional(InvoiceType),
    order_no: Type.Optional(OrderNo),
    description: Type.Optional(Description),
    autoconvert: Type.Optional(Ticker),
  },
  { additionalProperties: false },
);

interface Quote {
  merchant: Merchant;
  /** The currency's first entry (key, precision) with the highest network fee of the entries offered. */
  currency: Currency;
  /** The one entry an internalTicker names when its currency has several; null: every entry offered. */
  restricted: Currency | null;
  settlement: Currency;
  pricing: InvoicePricing;
  rail: PaymentRail;
  /** The rates fixed for the invoice's life (product §22); null only in the first, validating pass. */
  rates: QuoteRates | null;
}

/** What CreateInvoice and EstimateFees refuse. */
export type CreateInvoiceRefusal =
  | InvoiceAmountError
  | ExpiryError
  | CallbackUrlError
  | "unknown_currency"
  | "currency_unavailable"
  | "merchant_receive_amount_not_positive"
  | "invalid_api_key"
  | "merchant_not_active"
  | "rate_unavailable"
  | "idempotency_key_reused";

function unknownCurrency(field: "currency" | "autoconvert", ticker: string): never {
  return refuse("unknown_currency", `Unknown currency ${ticker}.`, `/${field}`, "is not a catalog ticker");
}

/**
 * The amount and fees at the ticker's `precision` (product §23: the smallest decimals of its
 * entries), answered in the units of `currency`, the first entry (where invoice amounts are kept).
 */
function priceAtPrecision(
  input: number | string,
  currency: Currency,
  precision: number,
  merchant: Merchant,
): InvoicePricing {
  const amount = parseInvoiceAmount(input, precision);
  if (!amount.ok) {
    refuse(amount.error, `amount: ${amount.detail ?? "is invalid"}.`, "/amount", amount.detail ?? "is invalid");
  }
  const feePercent = parseDecimal(merchant.feePercent);
  if (feePercent === null) throw invariantViolation(`merchant ${merchant.id} has a decimal fee percent`);
  const priced = priceInvoice(
    amount.value,
    { networkFeeMinor: inUnitsOf(currency.networkFeeMinor, currency.decimals, precision) },
    { feePercent, feesPaidBy: merchant.feesPaidBy },
  );
  if (!priced.ok) {
    refuse(
      "merchant_receive_amount_not_positive",
      "The fees take the whole amount: merchant_receive_amount would not be positive.",
      "/amount",
      "does not cover the fees",
    );
  }
  const up = (minor: bigint) => inUnitsOf(minor, precision, currency.decimals);
  const p = priced.value;
  return {
    amount: up(p.amount),
    merchantFee: up(p.merchantFee),
    networkAndOtherFees: up(p.networkAndOtherFees),
    finalAmount: up(p.finalAmount),
    merchantReceiveAmount: up(p.merchantReceiveAmount),
  };
}

/** The pricing both EstimateFees and CreateInvoice answer with, so the two always agree. Two or three key lookups. */
async function quote(
  tx: Tx,
  rails: PaymentRails,
  merchantId: string,
  body: { currency: string; amount: number | string; autoconvert?: string | undefined },
  /** Null: validate only (the rates are read after, outside any transaction); else the rates to quote at. */
  rates: QuoteRates | null,
): Promise<Quote> {
  const merchant = await findMerchant(tx, merchantId);
  if (!merchant) return refuse("invalid_api_key", "The API key is unknown or revoked.", "/", null);
  // The two currencies by key: reading the whole catalog cost more than the rest of the insert.
  // A ticker offers every entry of the currency that passes the gate; an internalTicker its own (product §23).
  const named = await resolveCurrencyName(tx, body.currency);
  if (!named) return unknownCurrency("currency", body.currency);
  const offered = named.entries.filter((entry) => paymentRail(entry, rails).ok);
  const rail = paymentRail(offered[0] ?? named.primary, rails);
  // The ticker's precision, the smallest decimals of its entries (product §23): amounts are kept in
  // the first entry's units, multiples of the precision's unit.
  const precision = precisionOf(
    named.restricted === null ? named.entries : await entriesOf(tx, symbolOf(named.primary)),
  );
  // Priced with the highest network fee of the entries offered, fixed at creation.
  const currency = pricedOver(named.primary, offered, precision);
  if (!rail.ok) {
    refuse(
      rail.error,
      `${rail.detail ?? "This currency cannot be paid"}.`,
      "/currency",
      "cannot be paid in live mode on this service",
    );
  }
  const settlement =
    body.autoconvert === undefined || body.autoconvert === body.currency
      ? currency
      : await findCurrency(tx, body.autoconvert);
  if (!settlement) return unknownCurrency("autoconvert", body.autoconvert ?? "");

  const priced = priceAtPrecision(body.amount, currency, precision, merchant);
  if (
    rates !== null &&
    settlement !== currency &&
    convert(priced.merchantReceiveAmount, atQuotedRate(currency, rates), atQuotedRate(settlement, rates)) <= 0n
  ) {
    refuse(
      "merchant_receive_amount_not_positive",
      `merchant_receive_amount rounds to nothing in ${settlement.ticker}.`,
      "/amount",
      "is too small to settle in the autoconvert currency",
    );
  }
  return {
    merchant,
    currency,
    restricted: named.restricted,
    settlement,
    pricing: priced,
    rail: rail.value,
    rates,
  };
}

/**
 * The rates a quote of this body fixes, read from each currency's source after the body was
 * validated (a 400 comes first) and outside any transaction: a feed read is network I/O, bounded
 * by RATE_READ_TIMEOUT_MS. A stale or unreadable rate is 503 rate_unavailable, and nothing is made.
 */
async function fixRates(
  ctx: ServiceContext,
  rails: PaymentRails,
  merchantId: string,
  body: { currency: string; amount: number | string; autoconvert?: string | undefined },
): Promise<QuoteRates> {
  const validated = await quote(ctx.store, rails, merchantId, body, null);
  const answer = await ctx.rates.quoteRates([validated.currency, validated.settlement]);
  if (!answer.ok) {
    const { ticker, detail, retryAfterSeconds } = answer.unavailable;
    refuseWith({
      code: "rate_unavailable",
      detail: `The rate of ${ticker} cannot be read now (${detail}); no quote was made. Retry after the time in Retry-After.`,
      pointer: "/",
      fieldDetail: null,
      retryAfterSeconds,
    });
  }
  return answer.value;
}

export type CreateBody = Static<typeof CreateInvoiceBody>;

/** The original invoice of an idempotency key: returned when the body is the same, else a 409. */
function replay(existing: LoadedInvoice, requestHash: string | null): LoadedInvoice {
  if (existing.invoice.requestHash !== requestHash) {
    refuse(
      "idempotency_key_reused",
      "This idempotencyKey was used with a different request body; use a new key for a new invoice.",
      "/",
      null,
    );
  }
  return existing;
}

/** Where a payer sends money: the address, and what it is (a derived index, a forwarder's factory, or neither). */
interface Deposit {
  address: string | null;
  index: number | null;
  factory: string | null;
}

/**
 * Where the payer sends money. Only the sandbox rail derives an address from the invoice id
 * (nobody holds its key, and no real money is asked for there); a live rail's address is the
 * invoice's forwarder under the hot wallet's factory (product §24): no key exists for it, only the
 * factory's owner can move what it receives, and only to the hot wallet. The gate opens the rail
 * only once that factory is recorded deployed on the network.
 */
function depositAddress(ctx: ServiceContext, q: Quote, invoiceId: string): Deposit {
  switch (q.rail) {
    case "sandbox":
      return { address: isFiat(q.currency) ? null : sandboxDepositAddress(invoiceId), index: null, factory: null };
    case "card":
      return { address: null, index: null, factory: null };
    case "evm": {
      if (ctx.wallet === null) throw invariantViolation("the evm rail is open only with a wallet");
      const owner = ctx.wallet.hotAddress;
      const factory = factoryAddress(owner).toLowerCase();
      return { address: invoiceDepositAddress(owner, invoiceId), index: null, factory };
    }
  }
}

function newInvoice(
  body: CreateBody,
  merchantId: string,
  q: Quote,
  fields: {
    id: string;
    expiresAt: string;
    now: string;
    requestHash: string | null;
    deposit: Deposit;
  },
): Invoice {
  const id = fields.id;
  return {
    id,
    merchantId,
    idempotencyKey: body.idempotencyKey ?? null,
    requestHash: fields.requestHash,
    type: body.type ?? DEFAULT_INVOICE_TYPE,
    status: "pending",
    currency: q.currency.ticker,
    settlementCurrency: q.settlement.ticker,
    convertCurrency: body.autoconvert ?? null,
    quoteRates: q.rates,
    amountMinor: q.pricing.amount,
    finalAmountMinor: q.pricing.finalAmount,
    merchantFeeMinor: q.pricing.merchantFee,
    networkAndOtherFeesMinor: q.pricing.networkAndOtherFees,
    merchantReceiveAmountMinor: q.pricing.merchantReceiveAmount,
    callbackUrl: body.callbackUrl ?? null,
    successUrl: body.success_url ?? null,
    returnUrl: body.return_url ?? null,
    failUrl: body.fail_url ?? null,
    orderNo: body.order_no ?? null,
    description: body.description ?? null,
    // A fiat invoice learns its card provider from its first payment.
    apiSource: null,
    depositAddress: fields.deposit.address,
    depositIndex: fields.deposit.index,
    depositFactory: fields.deposit.factory,
    currencyEntry: q.restricted?.ticker ?? null,
    expiresAt: fields.expiresAt,
    createdAt: fields.now,
    updatedAt: fields.now,
  };
}

/**
 * Creates an invoice for a merchant: CreateInvoice's rules and store, shared by the dashboard's payment links.
 * The callback URL is checked before the transaction (resolving its host is network I/O).
 */
export function createInvoiceFor(
  ctx: ServiceContext,
  merchantId: string,
  body: CreateBody,
  /** Runs in the creating transaction (the dashboard's audit row commits with the invoice). */
  alongside?: (tx: Tx, loaded: LoadedInvoice) => Promise<unknown>,
): Promise<Outcome<LoadedInvoice, CreateInvoiceRefusal>> {
  return withRefusals(() => createInvoice(ctx, merchantId, body, alongside));
}

/** What an invoice's creation reads before its transaction: network I/O (the callback host, the rate feeds) never runs inside one. */
export interface PreparedInvoice {
  merchantId: string;
  body: CreateBody;
  rails: PaymentRails;
  /** Null only for a replay of an idempotency key, which answers the original. */
  rates: QuoteRates | null;
  requestHash: string | null;
}

/** The reads before an invoice's transaction; refuses by `refuse` (wrap in withRefusals). */
export async function prepareInvoice(
  ctx: ServiceContext,
  merchantId: string,
  body: CreateBody,
): Promise<PreparedInvoice> {
  const requestHash = body.idempotencyKey === undefined ? null : requestFingerprint(body);
  // Resolving the host is network I/O: done before the transaction, and again at every delivery.
  if (body.callbackUrl !== undefined) {
    const refused = await callbackUrlRefusal(body.callbackUrl, ctx.config.serviceMode, "/callbackUrl");
    if (refused !== null) refuseWith(refused);
  }
  const rails = await currentRails(ctx);
  // A replay answers the original whatever the rates are now; otherwise the rates are fixed first.
  const replayed =
    body.idempotencyKey !== undefined &&
    (await findInvoiceByIdempotencyKey(ctx.store, merchantId, body.idempotencyKey)) !== null;
  const rates = replayed ? null : await fixRates(ctx, rails, merchantId, body);
  return { merchantId, body, rails, rates, requestHash };
}

/** createInvoiceFor, refusing by `refuse` (inside its transaction, which then rolls back). */
async function createInvoice(
  ctx: ServiceContext,
  merchantId: string,
  body: CreateBody,
  alongside?: (tx: Tx, loaded: LoadedInvoice) => Promise<unknown>,
): Promise<LoadedInvoice> {
  const prepared = await prepareInvoice(ctx, merchantId, body);
  // PostgreSQL without an idempotency key and with nothing to write alongside: the insert is the
  // only statement that must be atomic, so it runs outside a transaction after the pricing read
  // through the store's cache (sharedCache.ts), instead of BEGIN, two reads, the insert and COMMIT,
  // in the process's next batch of new invoices (one round trip and one commit for the batch,
  // statementBatches.ts). A live deposit address is computed from the new invoice id (a
  // forwarder's), so nothing else is written.
  if (ctx.store.dialect === "postgres" && body.idempotencyKey === undefined && alongside === undefined) {
    return createPreparedInvoice(ctx, ctx.store, prepared, true);
  }
  return ctx.store.transaction(async (tx): Promise<LoadedInvoice> => {
    const loaded = await createPreparedInvoice(ctx, tx, prepared);
    await alongside?.(tx, loaded);
    return loaded;
  });
}

/**
 * Creates a prepared invoice through `tx`: a transaction (the caller's, which may write more in
 * it), or on the fast path the store itself, inserting in a batch (`batched`). Refuses by `refuse`.
 */
export async function createPreparedInvoice(
  ctx: ServiceContext,
  tx: Tx,
  prepared: PreparedInvoice,
  batched = false,
): Promise<LoadedInvoice> {
  const { body, merchantId, requestHash, rates } = prepared;
  // A retry is answered before anything is re-validated: the original stands as it was.
  if (body.idempotencyKey !== undefined) {
    const existing = await findInvoiceByIdempotencyKey(tx, merchantId, body.idempotencyKey);
    if (existing) return replay(existing, requestHash);
  }
  // Only a request that raced its own replay finds no rates here: its original now exists.
  if (rates === null) throw invariantViolation("an invoice is quoted at fixed rates");
  const q = await quote(tx, prepared.rails, merchantId, body, rates);
  if (q.merchant.status !== "active") {
    refuse("merchant_not_active", "The merchant is suspended and cannot create invoices.", "/", null);
  }
  const nowMs = Date.now();
  const expiresAt = resolveExpiry(body.expiresAt, nowMs);
  if (!expiresAt.ok) {
    refuse(
      expiresAt.error,
      `${expiresAt.detail ?? "expiresAt is invalid"}.`,
      "/expiresAt",
      expiresAt.detail ?? "is invalid",
    );
  }
  const id = newRowId();
  const invoice = newInvoice(body, merchantId, q, {
    id,
    deposit: depositAddress(ctx, q, id),
    expiresAt: expiresAt.value,
    now: new Date(nowMs).toISOString(),
    requestHash,
  });
  if (batched) {
    await insertInvoiceInBatch(tx, invoice);
    return { invoice, decimals: q.currency.decimals, payments: [] };
  }
  if (await insertInvoice(tx, invoice)) return { invoice, decimals: q.currency.decimals, payments: [] };
  // Another request with this key committed first: it is the original.
  const winner = await findInvoiceByIdempotencyKey(tx, merchantId, body.idempotencyKey ?? "");
  if (!winner) throw invariantViolation("an idempotency conflict has a winner");
  return replay(winner, requestHash);
}

/**
 * EstimateFees: the fees and amounts an invoice with these fields would have, at the rates an
 * invoice would fix now (a stale feed is the same 503 here as at creation).
 */
export function estimateFees(
  ctx: ServiceContext,
  merchantId: string,
  body: Static<typeof EstimateFeesBody>,
): Promise<Outcome<FeeEstimate, CreateInvoiceRefusal>> {
  return withRefusals(async () => {
    const rails = await currentRails(ctx);
    const rates = await fixRates(ctx, rails, merchantId, body);
    const q = await quote(ctx.store, rails, merchantId, body, rates);
    return feeEstimate(q.pricing, q.currency.decimals);
  });
}
