// Live payouts' chain side: payout transactions (signed, stored, then broadcast), what the hot wallet has promised, and the operator's per-network fee settings.
import { newRowId } from "../domain/ids.ts";
import { movement, SYSTEM_ACCOUNTS, transfer } from "../domain/ledger.ts";
import {
  canTxTransition,
  type Fees,
  isPayoutTxState,
  type PayoutTxState,
  WEI_PER_GWEI,
} from "../domain/payoutTransaction.ts";
import { assert } from "../domain/result.ts";
import { postMovement } from "./ledger.ts";
import { type NonceOverview, nonceOverview } from "./nonceFills.ts";
import type { Payout } from "./payouts.ts";
import type { PayoutTransactionsTable } from "./schema.ts";
import type { Tx } from "./store.ts";

export interface PayoutTransaction {
  id: string;
  payoutRequestKey: string;
  network: string;
  chainId: number;
  fromAddress: string;
  nonce: number;
  hash: string;
  raw: string;
  toAddress: string;
  assetContract: string | null;
  recipient: string;
  amount: bigint;
  valueWei: bigint;
  gasLimit: bigint;
  fees: Fees;
  replacesId: string | null;
  state: PayoutTxState;
  broadcastAt: string | null;
  broadcastCount: number;
  lastError: string | null;
  blockNumber: bigint | null;
  blockHash: string | null;
  receiptStatus: "success" | "reverted" | null;
  gasUsed: bigint | null;
  effectiveGasPrice: bigint | null;
  createdAt: string;
  updatedAt: string;
}

const big = (v: string | null) => (v === null ? null : BigInt(v));

function fromRow(r: PayoutTransactionsTable): PayoutTransaction {
  assert(isPayoutTxState(r.state), `payout transaction ${r.id} has a known state`);
  return {
    id: r.id,
    payoutRequestKey: r.payout_request_id,
    network: r.network,
    chainId: Number(r.chain_id),
    fromAddress: r.from_address,
    nonce: Number(r.nonce),
    hash: r.hash,
    raw: r.raw,
    toAddress: r.to_address,
    assetContract: r.asset_contract,
    recipient: r.recipient,
    amount: BigInt(r.amount),
    valueWei: BigInt(r.value_wei),
    gasLimit: BigInt(r.gas_limit),
    fees: { maxFeePerGas: BigInt(r.max_fee_per_gas), maxPriorityFeePerGas: BigInt(r.max_priority_fee_per_gas) },
    replacesId: r.replaces_id,
    state: r.state,
    broadcastAt: r.broadcast_at,
    broadcastCount: Number(r.broadcast_count),
    lastError: r.last_error,
    blockNumber: big(r.block_number),
    blockHash: r.block_hash,
    receiptStatus: r.receipt_status === "success" || r.receipt_status === "reverted" ? r.receipt_status : null,
    gasUsed: big(r.gas_used),
    effectiveGasPrice: big(r.effective_gas_price),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

// ---- nonces -------------------------------------------------------------------------------------
// Nonces come from takeHotNonce (src/store/networks.ts): one allocator for every transaction of the
// hot wallet (payouts and sweeps' gas), the network row locked until the transaction that stores
// what was signed with it commits.

/**
 * Locks the network's row (PostgreSQL `FOR UPDATE`) before any payout row: signers lock it first,
 * then payouts, so two processes signing together never wait on each other in a cycle.
 */
export async function lockHotNonce(tx: Tx, network: string): Promise<void> {
  await tx.db
    .selectFrom("networks")
    .select("hot_nonce")
    .where("name", "=", network)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
}

/** The next nonce the hot wallet will take on a network, as stored (null before its first). */
export async function nextHotNonce(tx: Tx, network: string): Promise<number | null> {
  const row = await tx.db.selectFrom("networks").select("hot_nonce").where("name", "=", network).executeTakeFirst();
  return row?.hot_nonce === null || row?.hot_nonce === undefined ? null : Number(row.hot_nonce);
}

// ---- settings -----------------------------------------------------------------------------------

export interface NetworkPayoutSettings {
  /** Cap on maxFeePerGas, in gwei (plain decimal text, as the operator wrote it). */
  maxFeePerGasGwei: string;
  replaceAfterSeconds: number;
}

export const DEFAULT_PAYOUT_SETTINGS: NetworkPayoutSettings = { maxFeePerGasGwei: "500", replaceAfterSeconds: 180 };

export async function findPayoutSettings(tx: Tx, network: string): Promise<NetworkPayoutSettings> {
  const row = await tx.db
    .selectFrom("network_payout_settings")
    .selectAll()
    .where("network", "=", network)
    .executeTakeFirst();
  return row
    ? { maxFeePerGasGwei: row.max_fee_per_gas_gwei, replaceAfterSeconds: Number(row.replace_after_seconds) }
    : DEFAULT_PAYOUT_SETTINGS;
}

export async function savePayoutSettings(tx: Tx, network: string, settings: NetworkPayoutSettings, now: string) {
  await tx.db
    .insertInto("network_payout_settings")
    .values({
      network,
      max_fee_per_gas_gwei: settings.maxFeePerGasGwei,
      replace_after_seconds: settings.replaceAfterSeconds,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.column("network").doUpdateSet({
        max_fee_per_gas_gwei: settings.maxFeePerGasGwei,
        replace_after_seconds: settings.replaceAfterSeconds,
        updated_at: now,
      }),
    )
    .execute();
}

/** The fee cap in wei; the gwei text has at most 9 fraction digits (checked where it is accepted). */
export function capInWei(gwei: string): bigint {
  const [whole = "0", fraction = ""] = gwei.split(".");
  return BigInt(whole) * WEI_PER_GWEI + BigInt(fraction.padEnd(9, "0").slice(0, 9));
}

// ---- transactions -------------------------------------------------------------------------------

/** What is known of a transaction when it is signed: everything but its progress. */
export type NewPayoutTransaction = Omit<
  PayoutTransaction,
  | "id"
  | "state"
  | "broadcastAt"
  | "broadcastCount"
  | "lastError"
  | "blockNumber"
  | "blockHash"
  | "receiptStatus"
  | "gasUsed"
  | "effectiveGasPrice"
  | "createdAt"
  | "updatedAt"
>;

export async function insertPayoutTransaction(tx: Tx, t: NewPayoutTransaction, now: string): Promise<string> {
  const id = newRowId();
  await tx.db
    .insertInto("payout_transactions")
    .values({
      id,
      payout_request_id: t.payoutRequestKey,
      network: t.network,
      chain_id: t.chainId,
      from_address: t.fromAddress.toLowerCase(),
      nonce: t.nonce,
      hash: t.hash.toLowerCase(),
      raw: t.raw,
      to_address: t.toAddress.toLowerCase(),
      asset_contract: t.assetContract?.toLowerCase() ?? null,
      recipient: t.recipient.toLowerCase(),
      amount: t.amount.toString(),
      value_wei: t.valueWei.toString(),
      gas_limit: t.gasLimit.toString(),
      max_fee_per_gas: t.fees.maxFeePerGas.toString(),
      max_priority_fee_per_gas: t.fees.maxPriorityFeePerGas.toString(),
      replaces_id: t.replacesId,
      state: "signed",
      broadcast_at: null,
      broadcast_count: 0,
      last_error: null,
      block_number: null,
      block_hash: null,
      receipt_status: null,
      gas_used: null,
      effective_gas_price: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

/** Transactions of a network that are not final yet, lowest nonce first, at most `limit`. */
export async function openPayoutTransactions(tx: Tx, network: string, limit: number): Promise<PayoutTransaction[]> {
  const rows = await tx.db
    .selectFrom("payout_transactions")
    .selectAll()
    .where("network", "=", network)
    .where("state", "in", ["signed", "broadcast", "dropped", "mined"])
    .orderBy("nonce")
    .orderBy("created_at")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

export async function transactionsOfPayout(tx: Tx, requestKey: string): Promise<PayoutTransaction[]> {
  const rows = await tx.db
    .selectFrom("payout_transactions")
    .selectAll()
    .where("payout_request_id", "=", requestKey)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map(fromRow);
}

export interface TxUpdate {
  broadcastAt?: string;
  lastError?: string | null;
  receipt?: {
    blockNumber: bigint;
    blockHash: string;
    status: "success" | "reverted";
    gasUsed: bigint;
    effectiveGasPrice: bigint;
  } | null;
}

/**
 * Moves a transaction along the table (src/domain/payoutTransaction.ts), only from the state the
 * caller saw: answers false when another process moved it first.
 */
export async function moveTransaction(
  tx: Tx,
  t: PayoutTransaction,
  to: PayoutTxState,
  update: TxUpdate,
  now: string,
): Promise<boolean> {
  assert(t.state === to || canTxTransition(t.state, to), `payout transaction ${t.state} -> ${to} is in the table`);
  const receipt = update.receipt;
  const result = await tx.db
    .updateTable("payout_transactions")
    .set((eb) => ({
      state: to,
      updated_at: now,
      ...(update.broadcastAt !== undefined
        ? { broadcast_at: update.broadcastAt, broadcast_count: eb("broadcast_count", "+", 1) }
        : {}),
      ...(update.lastError !== undefined ? { last_error: update.lastError?.slice(0, 1000) ?? null } : {}),
      ...(receipt !== undefined
        ? {
            block_number: receipt?.blockNumber.toString() ?? null,
            block_hash: receipt?.blockHash ?? null,
            receipt_status: receipt?.status ?? null,
            gas_used: receipt?.gasUsed.toString() ?? null,
            effective_gas_price: receipt?.effectiveGasPrice.toString() ?? null,
          }
        : {}),
    }))
    .where("id", "=", t.id)
    .where("state", "=", t.state)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** The payout's public processor fields while it is on its way (signed, broadcast, mined, awaiting_funds). */
export async function reportPayoutProgress(
  tx: Tx,
  requestKey: string,
  report: { processorStatus: string; processorTxId?: string | null },
  now: string,
): Promise<void> {
  const current = await tx.db
    .selectFrom("payouts")
    .select(["processor_status", "processor_tx_id"])
    .where("request_id", "=", requestKey)
    .executeTakeFirst();
  if (!current) return;
  const txId = report.processorTxId === undefined ? current.processor_tx_id : report.processorTxId;
  if (current.processor_status === report.processorStatus && current.processor_tx_id === txId) return;
  await tx.db
    .updateTable("payouts")
    .set({ processor_status: report.processorStatus, processor_tx_id: txId, updated_at: now })
    .where("request_id", "=", requestKey)
    .where("state", "in", ["queued", "sent"])
    .execute();
}

/**
 * Takes a queued payout with its signed transaction stored (queued -> sent), in the transaction
 * that stored it. Answers false when the payout is no longer queued (settled meanwhile).
 */
export async function takeQueuedPayout(tx: Tx, requestKey: string, hash: string, now: string): Promise<boolean> {
  const result = await tx.db
    .updateTable("payouts")
    .set({
      state: "sent",
      processor: CHAIN_PROCESSOR,
      processor_status: "signed",
      processor_tx_id: hash,
      attempts: 1,
      // The chain worker follows its own transactions; the generic check never asks about them.
      next_check_at: null,
      updated_at: now,
      state_changed_at: now,
    })
    .where("request_id", "=", requestKey)
    .where("state", "=", "queued")
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export const CHAIN_PROCESSOR = "chain";

/** Locks a payout row for a decision (PostgreSQL `FOR UPDATE`) and answers its state. */
export async function lockPayoutState(tx: Tx, requestKey: string): Promise<string | null> {
  const row = await tx.db
    .selectFrom("payouts")
    .select("state")
    .where("request_id", "=", requestKey)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  return row?.state ?? null;
}

/** Queued payouts in the currencies of one network, oldest first: the order they go out in. */
export async function queuedPayoutsOfNetwork(tx: Tx, network: string, limit: number, rail?: "evm") {
  return (
    tx.db
      .selectFrom("payouts")
      .innerJoin("currencies", "currencies.ticker", "payouts.currency")
      .select([
        "payouts.request_id as requestKey",
        "payouts.currency as currency",
        "payouts.amount as amount",
        "payouts.destination as destination",
        "payouts.processor_status as processorStatus",
        "currencies.contract_address as contractAddress",
      ])
      .where("payouts.state", "=", "queued")
      // The EVM rail's payouts only (chosen when each was accepted); without a rail, a test driving
      // the chain batch over payouts accepted in the sandbox.
      .$if(rail !== undefined, (qb) => qb.where("payouts.rail", "=", "evm"))
      .where("currencies.network", "=", network)
      .orderBy("payouts.created_at")
      .orderBy("payouts.request_id")
      .limit(limit)
      .execute()
  );
}

/** Payouts of a network that wait for the hot wallet to be funded: how many, and since when. */
export async function awaitingFundsOf(tx: Tx, network: string): Promise<{ count: number; oldestSince: string | null }> {
  const row = await tx.db
    .selectFrom("payouts")
    .innerJoin("currencies", "currencies.ticker", "payouts.currency")
    .select((eb) => [eb.fn.countAll<string>().as("n"), eb.fn.min("payouts.created_at").as("oldest")])
    .where("payouts.state", "=", "queued")
    .where("payouts.processor_status", "=", AWAITING_FUNDS)
    .where("currencies.network", "=", network)
    .executeTakeFirst();
  return { count: Number(row?.n ?? 0), oldestSince: (row?.oldest as string | null | undefined) ?? null };
}

export const AWAITING_FUNDS = "awaiting_funds";

/**
 * Records the gas a mined payout transaction cost the operator (once per payout: the ledger's
 * unique cause, cause id and kind): operator's network-fee account -> the chain's validators (as sweeps).
 */
export async function postPayoutNetworkFee(
  tx: Tx,
  payout: Payout,
  nativeCurrency: string,
  feeWei: bigint,
  hash: string,
  now: string,
): Promise<void> {
  if (feeWei <= 0n) return;
  const posted = await postMovement(
    tx,
    movement({
      cause: payout.ledgerCause,
      causeId: payout.requestKey,
      kind: "network_fee",
      memo: `gas of payout transaction ${hash}`,
      postings: transfer(SYSTEM_ACCOUNTS.operatorNetworkFees, SYSTEM_ACCOUNTS.chainGas, nativeCurrency, feeWei),
    }),
    now,
  );
  assert(posted.ok || posted.error === "already_posted", "a network fee is posted once");
}

/**
 * The chain used the payout's nonce for a transaction the service did not store: none of the
 * payout's transactions can be mined any more. They end as replaced and the payout goes to
 * reconciliation (sent -> needs_reconciliation): an operator establishes what happened.
 */
export async function markForeignNonce(
  tx: Tx,
  requestKey: string,
  group: readonly PayoutTransaction[],
  now: string,
): Promise<boolean> {
  if ((await lockPayoutState(tx, requestKey)) !== "sent") return false;
  for (const t of group)
    await moveTransaction(tx, t, "replaced", { lastError: "nonce used by a foreign transaction" }, now);
  const result = await tx.db
    .updateTable("payouts")
    .set({
      state: "needs_reconciliation",
      last_error: `nonce ${group[0]?.nonce} of the hot wallet was used by a transaction the service did not store`,
      state_changed_at: now,
    })
    .where("request_id", "=", requestKey)
    .where("state", "=", "sent")
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** What GET /admin/v1/networks and the metrics show of a network's payouts. */
export interface NetworkPayoutOverview {
  awaitingFunds: number;
  oldestAwaitingSince: string | null;
  /** Payouts with a transaction signed and not yet final. */
  inFlight: number;
  hotWalletNextNonce: number | null;
}

export type NetworkPayoutStatus = NetworkPayoutOverview & NonceOverview;

export async function networkPayoutOverview(tx: Tx, network: string): Promise<NetworkPayoutStatus> {
  const [awaiting, inFlight, next, nonces] = await Promise.all([
    awaitingFundsOf(tx, network),
    tx.db
      .selectFrom("payout_transactions")
      .select((eb) => eb.fn.count<string>("payout_request_id").distinct().as("n"))
      .where("network", "=", network)
      .where("state", "in", ["signed", "broadcast", "dropped", "mined"])
      .executeTakeFirst(),
    nextHotNonce(tx, network),
    nonceOverview(tx, network),
  ]);
  return {
    ...nonces,
    awaitingFunds: awaiting.count,
    oldestAwaitingSince: awaiting.oldestSince,
    inFlight: Number(inFlight?.n ?? 0),
    hotWalletNextNonce: next,
  };
}
