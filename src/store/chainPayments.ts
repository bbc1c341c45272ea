// Chain payments of live invoices (product §12): deposit addresses to invoices, unconfirmed payments by depth, and what a reorganisation drops.
import type { Tx } from "./store.ts";

export interface DepositInvoice {
  invoiceId: string;
  depositAddress: string;
  depositIndex: number;
  currency: string;
  /** The one catalog entry an internalTicker invoice is payable on; null: every entry of its currency. */
  currencyEntry?: string | null;
  /** The factory (lowercase) whose forwarder the deposit address is (migration 031): flushed, not swept; null: a derived address. */
  depositFactory?: string | null;
}

/** The live invoices whose deposit address is one of `addresses` (checksummed), in bounded chunks. */
export async function invoicesByDepositAddress(tx: Tx, addresses: readonly string[]): Promise<DepositInvoice[]> {
  const found: DepositInvoice[] = [];
  const unique = [...new Set(addresses)];
  for (let start = 0; start < unique.length; start += 500) {
    const rows = await tx.db
      .selectFrom("invoices")
      .select(["id", "deposit_address", "deposit_index", "currency", "currency_entry", "deposit_factory"])
      .where("deposit_address", "in", unique.slice(start, start + 500))
      .where("deposit_index", "is not", null)
      .execute();
    for (const r of rows) {
      if (r.deposit_address === null || r.deposit_index === null || r.deposit_index === undefined) continue;
      found.push({
        invoiceId: r.id,
        depositAddress: r.deposit_address,
        depositIndex: Number(r.deposit_index),
        currency: r.currency,
        currencyEntry: r.currency_entry ?? null,
        depositFactory: r.deposit_factory ?? null,
      });
    }
  }
  return found;
}

export interface UnconfirmedChainPayment {
  paymentId: string;
  invoiceId: string;
  txId: string;
  blockNumber: bigint;
}

/** Unconfirmed payments of a network mined at or before `maxBlock` (deep enough to confirm), oldest first, bounded. */
export async function unconfirmedUpTo(
  tx: Tx,
  network: string,
  maxBlock: bigint,
  limit: number,
): Promise<UnconfirmedChainPayment[]> {
  const rows = await tx.db
    .selectFrom("invoice_payments")
    .select(["id", "invoice_id", "tx_id", "block_number"])
    .where("network", "=", network)
    .where("confirmed", "=", 0)
    .where("block_number", "<=", maxBlock.toString())
    .orderBy("block_number")
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    paymentId: r.id,
    invoiceId: r.invoice_id,
    txId: r.tx_id,
    blockNumber: BigInt(r.block_number ?? 0),
  }));
}

/**
 * A reorganisation replaced the blocks after `forkBlock`: their unconfirmed payments never
 * happened on the chain that won, so they are deleted (they leave paid_amount). A confirmed
 * payment is final and stays. Answers the invoices touched.
 */
export async function dropPaymentsAfter(tx: Tx, network: string, forkBlock: bigint, now: string): Promise<string[]> {
  const doomed = await tx.db
    .selectFrom("invoice_payments")
    .select(["id", "invoice_id"])
    .where("network", "=", network)
    .where("confirmed", "=", 0)
    .where("block_number", ">", forkBlock.toString())
    .execute();
  if (doomed.length === 0) return [];
  await tx.db
    .deleteFrom("invoice_payments")
    .where(
      "id",
      "in",
      doomed.map((d) => d.id),
    )
    .execute();
  const invoiceIds = [...new Set(doomed.map((d) => d.invoice_id))];
  await tx.db.updateTable("invoices").set({ updated_at: now }).where("id", "in", invoiceIds).execute();
  return invoiceIds;
}

/** Statuses in which a deposit address still takes payments the scanner records (late ones included). */
const WATCHED_STATUSES = ["pending", "processing", "aml_check"] as const;
const LATE_STATUSES = ["expired", "failed", "completed"] as const;

/**
 * Whether any live invoice in one of `currencies` may still receive a payment worth reading block
 * bodies for: open, or expired, failed or completed with an expiry after `lateSince` (late payments
 * and overpayments are recorded, product §12).
 * Used by the scanner to skip transaction bodies when no native-coin invoice waits on a network.
 */
export async function depositAwaited(tx: Tx, currencies: readonly string[], lateSince: string): Promise<boolean> {
  if (currencies.length === 0) return false;
  const open = await tx.db
    .selectFrom("invoices")
    .select("id")
    .where("status", "in", [...WATCHED_STATUSES])
    .where("currency", "in", [...currencies])
    .where("deposit_index", "is not", null)
    .limit(1)
    .executeTakeFirst();
  if (open !== undefined) return true;
  const late = await tx.db
    .selectFrom("invoices")
    .select("id")
    .where("status", "in", [...LATE_STATUSES])
    .where("expires_at", ">", lateSince)
    .where("currency", "in", [...currencies])
    .where("deposit_index", "is not", null)
    .limit(1)
    .executeTakeFirst();
  return late !== undefined;
}
