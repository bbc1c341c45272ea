// Stray payments (product §23, issue 50): transfers to a deposit address that its invoice or customer address does not take, kept for the operator (GET /admin/v1/stray-payments, /metrics), never credited, and recoverable at a forwarder (strayRecoveries.ts).
import { sql } from "kysely";
import type { StrayPaymentsTable } from "./schema.ts";
import type { Tx } from "./store.ts";
import { recoveriesOf, type StrayRecovery } from "./strayRecoveries.ts";

export interface StrayPayment {
  network: string;
  txId: string;
  /** The invoice whose deposit address it reached, or the customer's deposit address (`depositAddressId`): exactly one. */
  invoiceId: string | null;
  depositAddressId?: string | null;
  /** The catalog entry's key (`USDT_ERC20`); `amountMinor` is in its own units. Null: a token the catalog lacks (`token`). */
  currency: string | null;
  token?: string | null;
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
      deposit_address_id: p.depositAddressId ?? null,
      currency: p.currency,
      token: p.token ?? null,
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

/** A stray payment as the operator sees it: its entry's ticker and decimals (null: not in the catalog), and its recovery. */
export interface StrayPaymentView extends StrayPayment {
  ticker: string | null;
  internalTicker: string | null;
  decimals: number | null;
  recovery: StrayRecovery | null;
}

/**
 * Stray payments, newest first (at most `limit`, 1–100): of one invoice or one customer's deposit
 * address when given, or of one network and these tx ids (a report's answer).
 */
export async function listStrayPayments(
  tx: Tx,
  filter: {
    invoiceId?: string | undefined;
    depositAddressId?: string | undefined;
    of?: { network: string; txIds: readonly string[] };
    limit: number;
  },
): Promise<StrayPaymentView[]> {
  let query = tx.db
    .selectFrom("stray_payments")
    .leftJoin("currencies", "currencies.ticker", "stray_payments.currency")
    .selectAll("stray_payments")
    .select(["currencies.symbol", "currencies.internal_ticker", "currencies.decimals"])
    .orderBy("stray_payments.created_at", "desc")
    .orderBy("stray_payments.tx_id", "desc")
    .limit(Math.max(1, Math.min(100, filter.limit)));
  if (filter.invoiceId !== undefined) query = query.where("stray_payments.invoice_id", "=", filter.invoiceId);
  if (filter.depositAddressId !== undefined) {
    query = query.where("stray_payments.deposit_address_id", "=", filter.depositAddressId);
  }
  if (filter.of !== undefined) {
    if (filter.of.txIds.length === 0) return [];
    query = query
      .where("stray_payments.network", "=", filter.of.network)
      .where("stray_payments.tx_id", "in", [...filter.of.txIds]);
  }
  const rows = await query.execute();
  const recoveries = await recoveriesOf(
    tx,
    rows.map((r) => ({ network: r.network, txId: r.tx_id })),
  );
  return rows.map((r) => ({
    ...strayOf(r),
    ticker: r.currency === null ? null : (r.symbol ?? r.currency),
    internalTicker: r.internal_ticker ?? null,
    decimals: r.decimals === null || r.decimals === undefined ? null : Number(r.decimals),
    recovery: recoveries.get(`${r.network}:${r.tx_id}`) ?? null,
  }));
}

function strayOf(r: StrayPaymentsTable): StrayPayment {
  return {
    network: r.network,
    txId: r.tx_id,
    invoiceId: r.invoice_id,
    depositAddressId: r.deposit_address_id ?? null,
    currency: r.currency,
    token: r.token ?? null,
    amountMinor: BigInt(r.amount),
    fromAddress: r.from_address,
    blockNumber: BigInt(r.block_number),
    blockHash: r.block_hash,
    createdAt: r.created_at,
  };
}

/** One stray payment by its network and tx id. */
export async function findStrayPayment(tx: Tx, network: string, txId: string): Promise<StrayPayment | undefined> {
  const row = await tx.db
    .selectFrom("stray_payments")
    .selectAll()
    .where("network", "=", network)
    .where("tx_id", "=", txId)
    .executeTakeFirst();
  return row === undefined ? undefined : strayOf(row);
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
