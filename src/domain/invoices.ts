// Rules of invoice creation that need no I/O: amount input, expiry, defaults, idempotency fingerprint, deposit addresses.
import { hash } from "node:crypto";
import canonicalize from "canonicalize";
import type { InvoiceStatus } from "./invoiceStatus.ts";
import { formatAmount, parseAmount } from "./money.ts";
import type { InvoiceView } from "./publicObjects.ts";
import type { PaymentValue, QuoteRates } from "./rates.ts";
import { assert, err, ok, type Result } from "./result.ts";
import { type AmlStatus, summarizePayments } from "./settlement.ts";

export type InvoiceType = "b2b" | "b2c";

/** The interface leaves `type` optional; most invoices are paid by consumers, so b2c is the default. */
export const DEFAULT_INVOICE_TYPE: InvoiceType = "b2c";
export const DEFAULT_EXPIRY_MS = 60 * 60 * 1000;
export const MAX_EXPIRY_MS = 30 * 24 * 60 * 60 * 1000;

/** Each way an input amount can be wrong has its own code, so a client can tell them apart. */
export type InvoiceAmountError =
  | "invalid_amount"
  | "amount_exponent_not_allowed"
  | "amount_negative"
  | "amount_not_positive"
  | "amount_too_precise";

const EXPONENT_STRING = /^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$/;

/**
 * Reads an amount given as a JSON number or a decimal string (product §3) into minor units. Numbers
 * go through their shortest round-trip form, so 0.1 is exactly one tenth and 1e-7 is too precise for
 * six decimals rather than rounded.
 */
export function parseInvoiceAmount(input: number | string, decimals: number): Result<bigint, InvoiceAmountError> {
  if (typeof input === "string" && EXPONENT_STRING.test(input)) {
    return err("amount_exponent_not_allowed", "write the amount as plain digits, without an exponent");
  }
  const parsed = parseAmount(input, decimals);
  if (parsed.ok) return parsed;
  const negative = typeof input === "number" ? input < 0 : input.startsWith("-");
  if (negative) {
    // A well-formed number below zero; "-0" is zero, not negative.
    const magnitude = parseAmount(typeof input === "number" ? -input : input.slice(1), decimals);
    if (magnitude.ok || magnitude.error === "amount_too_precise") {
      return err("amount_negative", "the amount must be positive");
    }
  }
  switch (parsed.error) {
    case "amount_not_positive":
      return err("amount_not_positive", "the amount must be greater than zero");
    case "amount_too_precise":
      return err("amount_too_precise", `the currency has ${decimals} fraction digits`);
    default:
      return err("invalid_amount", "the amount must be a plain decimal such as 100 or 100.5");
  }
}

export type ExpiryError = "invalid_expires_at" | "expires_at_not_future" | "expires_at_too_far";

/** RFC 3339 date-time; the offset (Z or ±hh:mm) is mandatory. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Milliseconds since the epoch of an RFC 3339 date-time with offset; fractions beyond milliseconds are cut. */
export function parseRfc3339(text: string): number | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const millis = Number((m[7] ?? "").slice(0, 3).padEnd(3, "0"));
  const offsetHours = Number(m[10] ?? 0);
  const offsetMinutes = Number(m[11] ?? 0);
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return null;
  if (offsetHours > 23 || offsetMinutes > 59) return null;
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !isLeap(year) ? 1 : 0);
  if (day < 1 || day > daysInMonth) return null;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  const sign = m[9] === "-" ? -1 : 1;
  return date.getTime() - sign * (offsetHours * 60 + offsetMinutes) * 60_000;
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/**
 * The stored `expires_at` (UTC, milliseconds) of a new invoice: 60 minutes after creation by
 * default; a given `expiresAt` must lie in the future and at most 30 days ahead.
 */
export function resolveExpiry(input: string | undefined, nowMs: number): Result<string, ExpiryError> {
  if (input === undefined) return ok(new Date(nowMs + DEFAULT_EXPIRY_MS).toISOString());
  const at = parseRfc3339(input);
  if (at === null) {
    return err("invalid_expires_at", "expiresAt must be an RFC 3339 date-time with an offset");
  }
  if (at <= nowMs) return err("expires_at_not_future", "expiresAt must lie in the future");
  if (at - nowMs > MAX_EXPIRY_MS) return err("expires_at_too_far", "expiresAt must be at most 30 days ahead");
  return ok(new Date(at).toISOString());
}

/** Fingerprint of a request body: SHA-256 of its RFC 8785 canonical form, so key order and number spelling do not matter. */
export function requestFingerprint(body: unknown): string {
  const canonical = canonicalize(body);
  assert(canonical !== undefined, "a JSON body canonicalizes");
  return hash("sha256", canonical, "hex");
}

/**
 * The deposit address of a crypto invoice. The sandbox has no wallet: the address is derived from
 * the invoice id, so it is stable, unique per invoice and shaped like an EVM address (every catalog
 * crypto currency is on ethereum).
 */
export function sandboxDepositAddress(invoiceId: string): string {
  return `0x${hash("sha256", `sandbox-deposit:${invoiceId}`, "hex").slice(0, 40)}`;
}

export interface Invoice {
  id: string;
  merchantId: string;
  idempotencyKey: string | null;
  /** SHA-256 of the canonical CreateInvoice body, kept with an idempotency key. */
  requestHash: string | null;
  type: InvoiceType;
  status: InvoiceStatus;
  currency: string;
  settlementCurrency: string;
  convertCurrency: string | null;
  /** Minor units of `currency`. */
  amountMinor: bigint;
  finalAmountMinor: bigint;
  merchantFeeMinor: bigint;
  networkAndOtherFeesMinor: bigint;
  merchantReceiveAmountMinor: bigint;
  callbackUrl: string | null;
  successUrl: string | null;
  returnUrl: string | null;
  failUrl: string | null;
  orderNo: string | null;
  description: string | null;
  apiSource: string | null;
  depositAddress: string | null;
  /** Live crypto invoices: the HD index of the deposit address (product §12); null otherwise. */
  depositIndex?: number | null;
  /**
   * Live crypto invoices made since forwarders (product §24): the factory (lowercase) whose CREATE2
   * forwarder the deposit address is; no key exists for it. Null or absent: a derived or sandbox address.
   */
  depositFactory?: string | null;
  /**
   * The one catalog entry (its key) an invoice requested by `internalTicker` is payable on (product
   * §23); null or absent: every entry of its currency that passes the live gate.
   */
  currencyEntry?: string | null;
  /** The rates fixed at creation (product §22); null or absent for invoices made before quotes were fixed. */
  quoteRates?: QuoteRates | null;
  expiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface IncomingPayment {
  id: string;
  invoiceId: string;
  txId: string;
  amountMinor: bigint;
  /** Sender address of an on-chain payment, when known; null for card payments. */
  fromAddress: string | null;
  confirmed: boolean;
  amlStatus: AmlStatus;
  /** Card payment provider; null on-chain. */
  provider: string | null;
  /** Where a live chain payment is (product §12); absent for sandbox and card payments. */
  chain?: ChainPaymentPlace | null;
  /** It reached the invoice after the invoice stopped taking payments: shown, not counted by settlement. */
  late?: boolean;
  /** Its USD value, recorded when it was confirmed (product §22); null before, or when confirmed before values were kept. */
  value?: PaymentValue | null;
  createdAt: string;
  updatedAt: string;
}

export interface ChainPaymentPlace {
  network: string;
  txHash: string;
  /** The Transfer log's index; null for a native transfer. */
  logIndex: number | null;
  blockNumber: bigint;
  blockHash: string;
}

/** The Invoice object of docs/merchant-api.md (PublicCreatedInvoiceResponse), as answered by GetInvoice: its schema's type. */
export type { InvoiceView };

export function invoiceUrl(publicBaseUrl: string, invoiceId: string): string {
  return `${publicBaseUrl}/pay/${encodeURIComponent(invoiceId)}`;
}

/** An invoice as the interface answers it: monetary strings in the invoice currency, `paid_amount` from its payments. */
export function invoiceView(
  i: Invoice,
  decimals: number,
  payments: readonly IncomingPayment[],
  publicBaseUrl: string,
): InvoiceView {
  const money = (minor: bigint) => formatAmount(minor, decimals);
  return {
    id: i.id,
    created_at: i.createdAt,
    updated_at: i.updatedAt,
    expires_at: i.expiresAt,
    invoice_url: invoiceUrl(publicBaseUrl, i.id),
    api_source: i.apiSource,
    type: i.type,
    status: i.status,
    merchant_id: i.merchantId,
    settlement_currency: i.settlementCurrency,
    currency: i.currency,
    convert_currency: i.convertCurrency,
    amount: money(i.amountMinor),
    final_amount: money(i.finalAmountMinor),
    merchant_fee: money(i.merchantFeeMinor),
    network_and_other_fees: money(i.networkAndOtherFeesMinor),
    merchant_receive_amount: money(i.merchantReceiveAmountMinor),
    paid_amount: money(summarizePayments(payments).paidMinor),
    callback_url: i.callbackUrl,
    success_url: i.successUrl,
    return_url: i.returnUrl,
    fail_url: i.failUrl,
    order_no: i.orderNo,
    description: i.description,
  };
}

/** Whether an invoice's deposit address is live: derived from the wallet (made before forwarders) or a forwarder's (product §24). */
export function isLiveDeposit(i: {
  depositIndex?: number | string | null | undefined;
  depositFactory?: string | null | undefined;
}): boolean {
  return (i.depositIndex !== null && i.depositIndex !== undefined) || (i.depositFactory ?? null) !== null;
}
