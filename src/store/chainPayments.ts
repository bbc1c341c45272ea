// Chain payments of live invoices (product §12): deposit addresses to invoices, unconfirmed payments by depth, and what a reorganisation drops.
import type { ExpressionBuilder } from "kysely";
import type { Database } from "./schema.ts";
import type { Tx } from "./store.ts";

/**
 * A live deposit address: derived from the wallet (deposit_index, made before forwarders) or a
 * forwarder's (deposit_factory, product §24). Sandbox and card invoices have neither.
 */
export function liveDeposit(eb: ExpressionBuilder<Database, "invoices">) {
  return eb.or([eb("invoices.deposit_index", "is not", null), eb("invoices.deposit_factory", "is not", null)]);
}

export interface DepositInvoice {
  invoiceId: string;
  depositAddress: string;
  /** The HD index of a derived address (made before forwarders); null: a forwarder's (depositFactory). */
  depositIndex: number | null;
  /** The factory (lowercase) whose forwarder the address is (product §24, migration 031): flushed, not swept; null: a derived address. */
  depositFactory: string | null;
  currency: string;
  /** The one catalog entry an internalTicker invoice is payable on; null: every entry of its currency. */
  currencyEntry?: string | null;
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
      .where(liveDeposit)
      .execute();
    for (const r of rows) {
      if (r.deposit_address === null) continue;
      const index = r.deposit_index === null || r.deposit_index === undefined ? null : Number(r.deposit_index);
      found.push({
        invoiceId: r.id,
        depositAddress: r.deposit_address,
        depositIndex: index,
        depositFactory: r.deposit_factory ?? null,
        currency: r.currency,
        currencyEntry: r.currency_entry ?? null,
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
 * happened on the chain that won, so they are deleted (they leave paid_amount) and their invoices'
 * expiry is due again. A confirmed payment is final and stays. Answers the invoices touched.
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
  // An expiry deferred for the dropped payments' confirmations is due again: the expiry worker
  // decides anew (failed when nothing covers it any more), or the invoice stays open for good.
  await tx.db
    .updateTable("invoices")
    .set({ updated_at: now, expiry_deferred: 0 })
    .where("id", "in", invoiceIds)
    .execute();
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
    .where(liveDeposit)
    .limit(1)
    .executeTakeFirst();
  if (open !== undefined) return true;
  const late = await tx.db
    .selectFrom("invoices")
    .select("id")
    .where("status", "in", [...LATE_STATUSES])
    .where("expires_at", ">", lateSince)
    .where("currency", "in", [...currencies])
    .where(liveDeposit)
    .limit(1)
    .executeTakeFirst();
  return late !== undefined;
}
