// The hot wallet's outbox (product §26): every transaction it signs, whatever its purpose, stored before it is broadcast and moved only along the state table of src/domain/hotTransaction.ts.
import {
  canHotTxTransition,
  type Fees,
  type HotTxPurpose,
  type HotTxState,
  isHotTxPurpose,
  isHotTxState,
  REPLACEABLE_HOT_TX_STATES,
} from "../domain/hotTransaction.ts";
import { newRowId } from "../domain/ids.ts";
import { type LedgerCause, movement, SYSTEM_ACCOUNTS, transfer } from "../domain/ledger.ts";
import { assert } from "../domain/result.ts";
import { postMovement } from "./ledger.ts";
import type { HotTransactionsTable } from "./schema.ts";
import type { Tx } from "./store.ts";

/** The call a transaction makes: where to, the coin it sends, and its data (none: a plain transfer). */
export interface HotCall {
  to: `0x${string}`;
  value: bigint;
  data?: `0x${string}`;
}

export interface HotTransaction {
  id: string;
  purpose: HotTxPurpose;
  purposeId: string;
  network: string;
  chainId: number;
  fromAddress: string;
  nonce: number;
  hash: string;
  raw: string;
  call: HotCall;
  /** Tokens it carries out of the hot wallet (a payout's): promised until it is mined. */
  tokenContract: string | null;
  tokenAmount: bigint;
  gasLimit: bigint;
  fees: Fees;
  replacesId: string | null;
  state: HotTxState;
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

/** What is known of a transaction when it is signed: everything but its progress. */
export type NewHotTransaction = Pick<
  HotTransaction,
  | "purpose"
  | "purposeId"
  | "network"
  | "chainId"
  | "fromAddress"
  | "nonce"
  | "hash"
  | "raw"
  | "call"
  | "tokenContract"
  | "tokenAmount"
  | "gasLimit"
  | "fees"
  | "replacesId"
>;

const big = (v: string | null) => (v === null ? null : BigInt(v));

function fromRow(r: HotTransactionsTable): HotTransaction {
  assert(isHotTxState(r.state), `hot-wallet transaction ${r.id} has a known state`);
  assert(isHotTxPurpose(r.purpose), `hot-wallet transaction ${r.id} has a known purpose`);
  return {
    id: r.id,
    purpose: r.purpose,
    purposeId: r.purpose_id,
    network: r.network,
    chainId: Number(r.chain_id),
    fromAddress: r.from_address,
    nonce: Number(r.nonce),
    hash: r.hash,
    raw: r.raw,
    call: {
      to: r.to_address as `0x${string}`,
      value: BigInt(r.value_wei),
      ...(r.data === null ? {} : { data: r.data as `0x${string}` }),
    },
    tokenContract: r.token_contract,
    tokenAmount: BigInt(r.token_amount),
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

/** Stores a signed transaction (state `signed`), before anything broadcasts it; answers it as stored. */
export async function insertHotTransaction(tx: Tx, t: NewHotTransaction, now: string): Promise<HotTransaction> {
  const row: HotTransactionsTable = {
    id: newRowId(),
    purpose: t.purpose,
    purpose_id: t.purposeId,
    network: t.network,
    chain_id: t.chainId,
    from_address: t.fromAddress.toLowerCase(),
    nonce: t.nonce,
    hash: t.hash.toLowerCase(),
    raw: t.raw,
    to_address: t.call.to.toLowerCase(),
    value_wei: t.call.value.toString(),
    data: t.call.data ?? null,
    token_contract: t.tokenContract?.toLowerCase() ?? null,
    token_amount: t.tokenAmount.toString(),
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
  };
  await tx.db.insertInto("hot_transactions").values(row).execute();
  return fromRow(row);
}

const OPEN_STATES = ["signed", "broadcast", "dropped", "mined"] as const;

/** A network's transactions not final yet (of every purpose, or one), lowest nonce first, at most `limit`. */
export async function openHotTransactions(
  tx: Tx,
  network: string,
  limit: number,
  purpose?: HotTxPurpose,
): Promise<HotTransaction[]> {
  const rows = await tx.db
    .selectFrom("hot_transactions")
    .selectAll()
    .where("network", "=", network)
    .where("state", "in", [...OPEN_STATES])
    .$if(purpose !== undefined, (qb) => qb.where("purpose", "=", purpose as HotTxPurpose))
    .orderBy("nonce")
    .orderBy("created_at")
    .orderBy("id")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

/** Every transaction signed for one purpose's work, oldest first. */
export async function hotTransactionsOf(tx: Tx, purpose: HotTxPurpose, purposeId: string): Promise<HotTransaction[]> {
  const rows = await tx.db
    .selectFrom("hot_transactions")
    .selectAll()
    .where("purpose", "=", purpose)
    .where("purpose_id", "=", purposeId)
    .orderBy("created_at")
    .orderBy("id")
    .limit(1000)
    .execute();
  return rows.map(fromRow);
}

export interface HotTxUpdate {
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
 * Moves a transaction along the table (src/domain/hotTransaction.ts), only from the state the
 * caller saw: answers false when another process moved it first.
 */
export async function moveHotTransaction(
  tx: Tx,
  t: Pick<HotTransaction, "id" | "state">,
  to: HotTxState,
  update: HotTxUpdate,
  now: string,
): Promise<boolean> {
  assert(
    t.state === to || canHotTxTransition(t.state, to),
    `hot-wallet transaction ${t.state} -> ${to} is in the table`,
  );
  const receipt = update.receipt;
  const result = await tx.db
    .updateTable("hot_transactions")
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

/**
 * Locks the network's row (PostgreSQL `FOR UPDATE`): every signer of the hot wallet takes it
 * before any row of its purpose, so two processes signing together never wait on each other in a
 * cycle, and what the wallet has promised is read by one of them at a time.
 */
export async function lockHotNonce(tx: Tx, network: string): Promise<void> {
  await tx.db
    .selectFrom("networks")
    .select("hot_nonce")
    .where("name", "=", network)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
}

/**
 * One transaction at a nonce settled: every other transaction at that nonce that can still move
 * (signed, broadcast, dropped) becomes replaced, whatever state another process left it in since
 * this one read the group (a compare-and-set on the state read would leave it open, and the next
 * pass would take the settled nonce for a foreign transaction's).
 */
export async function replaceOthersAtNonce(
  tx: Tx,
  settled: Pick<HotTransaction, "id" | "network" | "fromAddress" | "nonce">,
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("hot_transactions")
    .set({ state: "replaced", updated_at: now })
    .where("network", "=", settled.network)
    .where("from_address", "=", settled.fromAddress.toLowerCase())
    .where("nonce", "=", settled.nonce)
    .where("id", "!=", settled.id)
    .where("state", "in", REPLACEABLE_HOT_TX_STATES)
    .execute();
}

/** The next nonce the hot wallet will take on a network, as stored (null before its first). */
export async function nextHotNonce(tx: Tx, network: string): Promise<number | null> {
  const row = await tx.db.selectFrom("networks").select("hot_nonce").where("name", "=", network).executeTakeFirst();
  return row?.hot_nonce === null || row?.hot_nonce === undefined ? null : Number(row.hot_nonce);
}

/** A network's purposes with a transaction in flight (signed and not final), by purpose: how many works. */
export async function inFlightByPurpose(tx: Tx, network: string): Promise<Map<HotTxPurpose, number>> {
  const rows = await tx.db
    .selectFrom("hot_transactions")
    .select(["purpose", (eb) => eb.fn.count<string>("purpose_id").distinct().as("n")])
    .where("network", "=", network)
    .where("state", "in", [...OPEN_STATES])
    .groupBy("purpose")
    .execute();
  return new Map(rows.filter((r) => isHotTxPurpose(r.purpose)).map((r) => [r.purpose as HotTxPurpose, Number(r.n)]));
}

/** The newest transaction of `purpose` confirmed for `purposeId` on `network`, if any (its hash answers a later call). */
export async function confirmedHotTransaction(
  tx: Tx,
  network: string,
  purpose: HotTxPurpose,
  purposeId: string,
): Promise<HotTransaction | null> {
  const row = await tx.db
    .selectFrom("hot_transactions")
    .selectAll()
    .where("network", "=", network)
    .where("purpose", "=", purpose)
    .where("purpose_id", "=", purposeId)
    .where("state", "=", "confirmed")
    .orderBy("created_at", "desc")
    .limit(1)
    .executeTakeFirst();
  return row ? fromRow(row) : null;
}

/**
 * The gas a settled transaction cost the operator (the merchants were credited what payers sent),
 * in the network's native coin: operator's network fees -> the chain's validators, once per cause.
 * Nothing when the catalog has no native coin for the network or nothing was spent.
 */
export async function postOperatorGas(
  tx: Tx,
  posting: { cause: LedgerCause; causeId: string; kind: string; memo: string },
  nativeCurrency: string | null,
  wei: bigint,
  now: string,
): Promise<void> {
  if (nativeCurrency === null || wei <= 0n) return;
  const postings = transfer(SYSTEM_ACCOUNTS.operatorNetworkFees, SYSTEM_ACCOUNTS.chainGas, nativeCurrency, wei);
  const posted = await postMovement(tx, movement({ ...posting, postings }), now);
  assert(
    posted.ok || posted.error === "already_posted",
    `the gas of ${posting.cause} ${posting.causeId} is posted once`,
  );
}
