// The dashboard overview's picture (product §14), as pure arithmetic: the last 30 UTC days, volume paid per currency and how invoices ended.
import { formatAmount } from "./money.ts";

/** The days the overview draws, today (UTC) included. */
export const CHART_DAYS = 30;

export type InvoiceOutcome = "completed" | "expired" | "other";

/**
 * Paid invoices count as completed even once refunded; `failed` is an invoice that expired part-paid,
 * so it ended as an expiry; everything else (pending, processing, under or blocked by screening) is other.
 */
export function invoiceOutcome(status: string): InvoiceOutcome {
  if (status === "completed" || status === "refund_processing" || status === "refunded") return "completed";
  if (status === "expired" || status === "failed") return "expired";
  return "other";
}

/** The CHART_DAYS UTC days ending with `now`'s, oldest first, as YYYY-MM-DD. */
export function chartDays(now: Date): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: CHART_DAYS }, (_, i) =>
    new Date(today - (CHART_DAYS - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}

export interface DayGroup {
  day: string;
  currency: string;
  status: string;
  invoices: number;
  finalAmountMinor: bigint;
}

export interface OverviewChart {
  from: string;
  to: string;
  /** One entry per day, oldest first: invoices created that day by how they ended (so far). */
  outcomes: { day: string; completed: number; expired: number; other: number }[];
  /** Per currency that took money: what payers paid (final_amount) for invoices that completed, per day. */
  volume: { currency: string; total: string; perDay: string[] }[];
}

/** Folds the grouped rows into the picture; rows outside `days` are ignored. Amounts exact, as decimal strings. */
export function overviewChart(
  days: readonly string[],
  groups: readonly DayGroup[],
  decimalsOf: (ticker: string) => number,
): OverviewChart {
  const index = new Map(days.map((d, i) => [d, i]));
  const outcomes = days.map((day) => ({ day, completed: 0, expired: 0, other: 0 }));
  const minor = new Map<string, bigint[]>();
  for (const g of groups) {
    const i = index.get(g.day);
    const slot = i === undefined ? undefined : outcomes[i];
    if (i === undefined || slot === undefined) continue;
    const outcome = invoiceOutcome(g.status);
    slot[outcome] += g.invoices;
    if (outcome !== "completed") continue;
    const perDay = minor.get(g.currency) ?? days.map(() => 0n);
    perDay[i] = (perDay[i] ?? 0n) + g.finalAmountMinor;
    minor.set(g.currency, perDay);
  }
  const volume = [...minor.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([currency, perDay]) => {
      const decimals = decimalsOf(currency);
      const total = perDay.reduce((sum, v) => sum + v, 0n);
      return { currency, total: formatAmount(total, decimals), perDay: perDay.map((v) => formatAmount(v, decimals)) };
    });
  return { from: days[0] ?? "", to: days.at(-1) ?? "", outcomes, volume };
}
