// An invoice's quote as merchants read it (product §22): the rates fixed at its creation and each payment's USD value at confirmation.
import { formatAmount, formatDecimal } from "../domain/money.ts";
import { formatUsd, type QuoteRate } from "../domain/rates.ts";
import type { LoadedInvoice } from "../store/invoices.ts";

export interface QuoteRateView {
  currency: string;
  rate_usd: string;
  source: QuoteRate["source"];
  updated_at: string | null;
}

export interface PaymentValueView {
  id: string;
  tx_id: string;
  amount: string;
  confirmed: boolean;
  /** USD at the invoice's fixed rate, recorded at confirmation; null while unconfirmed. */
  value_usd: string | null;
  /** The source's live rate at confirmation and the value at it; null when none was fresh then. */
  live_rate_usd: string | null;
  live_value_usd: string | null;
}

export interface QuoteView {
  invoice_id: string;
  /** False for invoices made before quotes were fixed: they convert at the catalog's rates. */
  fixed: boolean;
  rates: QuoteRateView[];
  payments: PaymentValueView[];
}

export function quoteRateViews(rates: readonly QuoteRate[]): QuoteRateView[] {
  return rates.map((r) => ({
    currency: r.ticker,
    rate_usd: formatDecimal(r.rateUsd),
    source: r.source,
    updated_at: r.updatedAt,
  }));
}

export function paymentValueView(p: LoadedInvoice["payments"][number], decimals: number): PaymentValueView {
  const value = p.value ?? null;
  return {
    id: p.id,
    tx_id: p.txId,
    amount: formatAmount(p.amountMinor, decimals),
    confirmed: p.confirmed,
    value_usd: value === null ? null : formatUsd(value.valueUsdMinor),
    live_rate_usd: value?.liveRateUsd ? formatDecimal(value.liveRateUsd) : null,
    live_value_usd: value === null || value.liveValueUsdMinor === null ? null : formatUsd(value.liveValueUsdMinor),
  };
}

export function quoteView(loaded: LoadedInvoice): QuoteView {
  const rates = loaded.invoice.quoteRates ?? null;
  return {
    invoice_id: loaded.invoice.id,
    fixed: rates !== null,
    rates: quoteRateViews(rates ?? []),
    payments: loaded.payments.map((p) => paymentValueView(p, loaded.decimals)),
  };
}

/** The sum of confirmed payments' USD values at the fixed rate (cents), or null when none has a value. */
export function paidValueUsdMinor(loaded: LoadedInvoice): bigint | null {
  let sum: bigint | null = null;
  for (const p of loaded.payments) {
    if (p.value) sum = (sum ?? 0n) + p.value.valueUsdMinor;
  }
  return sum;
}
