// Stray payments (product §23): transfers to a deposit address that its invoice does not take, kept for the operator (GET /admin/v1/stray-payments, /metrics) and never credited.
import { sql } from "kysely";
import type { Tx } from "./store.ts";

export interface StrayPayment {
  network: string;
  txId: string;
  invoiceId: string;
  /** The catalog entry's key (`USDT_ERC20`); `amountMinor` is in its own units. */
  currency: string;
  amountMinor: bigint;
  fromAddress: string;
  blockNumber: bigint;
  blockHash: string;
  createdAt: string;
}

/** Records a stray transfer once: seen again (a second scanner, a restart), it is the same row. */
export async function recordStrayPayment(tx: Tx, p: StrayPayment): Promise<void> {
  await tx.db
    .insertInto("stray_payments")
    .values({
      network: p.network,
      tx_id: p.txId,
      invoice_id: p.invoiceId,
      currency: p.currency,
      amount: p.amountMinor.toString(),
      from_address: p.fromAddress,
      block_number: p.blockNumber.toString(),
      block_hash: p.blockHash,
      created_at: p.createdAt,
    })
    .onConflict((oc) => oc.columns(["network", "tx_id"]).doNothing())
    .execute();
}

/** A reorganisation replaced the blocks after `forkBlock`: their stray transfers never happened on the chain that won. */
export async function dropStrayPaymentsAfter(tx: Tx, network: string, forkBlock: bigint): Promise<void> {
  await tx.db
    .deleteFrom("stray_payments")
    .where("network", "=", network)
    .where("block_number", ">", forkBlock.toString())
    .execute();
}

/** A stray payment as the operator sees it: its entry's ticker, network and decimals too. */
export interface StrayPaymentView extends StrayPayment {
  ticker: string;
  internalTicker: string;
  decimals: number;
}

/** Stray payments, newest first (at most `limit`, 1–100), of one invoice when `invoiceId` is given. */
export async function listStrayPayments(
  tx: Tx,
  filter: { invoiceId?: string | undefined; limit: number },
): Promise<StrayPaymentView[]> {
  let query = tx.db
    .selectFrom("stray_payments")
    .innerJoin("currencies", "currencies.ticker", "stray_payments.currency")
    .selectAll("stray_payments")
    .select(["currencies.symbol", "currencies.internal_ticker", "currencies.decimals"])
    .orderBy("stray_payments.created_at", "desc")
    .orderBy("stray_payments.tx_id", "desc")
    .limit(Math.max(1, Math.min(100, filter.limit)));
  if (filter.invoiceId !== undefined) query = query.where("stray_payments.invoice_id", "=", filter.invoiceId);
  const rows = await query.execute();
  return rows.map((r) => ({
    network: r.network,
    txId: r.tx_id,
    invoiceId: r.invoice_id,
    currency: r.currency,
    ticker: r.symbol ?? r.currency,
    internalTicker: r.internal_ticker,
    decimals: Number(r.decimals),
    amountMinor: BigInt(r.amount),
    fromAddress: r.from_address,
    blockNumber: BigInt(r.block_number),
    blockHash: r.block_hash,
    createdAt: r.created_at,
  }));
}

/** How many stray payments each network has (for /metrics). */
export async function strayPaymentCounts(tx: Tx): Promise<Map<string, number>> {
  const rows = await tx.db
    .selectFrom("stray_payments")
    .select(["network", sql<number | string>`count(*)`.as("n")])
    .groupBy("network")
    .execute();
  return new Map(rows.map((r) => [r.network, Number(r.n)]));
}
