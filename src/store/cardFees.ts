// The card provider's fees as the operator's ledger holds them (product §20): summed per currency for the operator's report.
import { SYSTEM_ACCOUNTS } from "../domain/ledger.ts";
import type { Tx } from "./store.ts";

export interface CardFeeTotal {
  currency: string;
  /** What the provider kept, less what it gave back, in the ledger's minor units of the currency. */
  feesMinor: bigint;
  /** Card payments whose fee is booked. */
  payments: number;
  /** Card refunds whose balance transaction had a fee (given back or charged). */
  refunds: number;
}

/**
 * Every fee booked, per currency in ledger order. Summed here in bigint: the ledger stores amounts
 * as text, and SQLite's sum would go through floating point.
 */
export async function cardFeeTotals(tx: Tx): Promise<CardFeeTotal[]> {
  const rows = await tx.db
    .selectFrom("ledger_entries")
    .innerJoin("ledger_movements", "ledger_movements.id", "ledger_entries.movement_id")
    .select(["ledger_entries.currency", "ledger_entries.amount", "ledger_movements.kind"])
    .where("ledger_movements.cause", "=", "card_fee")
    .where("ledger_entries.account", "=", SYSTEM_ACCOUNTS.operatorCardFees)
    .orderBy("ledger_entries.id")
    .execute();
  const totals = new Map<string, CardFeeTotal>();
  for (const row of rows) {
    const total = totals.get(row.currency) ?? { currency: row.currency, feesMinor: 0n, payments: 0, refunds: 0 };
    // The operator's account is debited by a fee: its negated sum is what the fees cost.
    total.feesMinor -= BigInt(row.amount);
    if (row.kind === "payment") total.payments += 1;
    else total.refunds += 1;
    totals.set(row.currency, total);
  }
  return [...totals.values()].sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0));
}
