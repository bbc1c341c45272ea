// The operator's recoveries of stray payments at forwarders (issue 50): one per stray, queued for the flusher, carried by a flush as deposits are, and settled from its Flushed event; every change a compare-and-set.
import { newRowId } from "../domain/ids.ts";
import { assert } from "../domain/result.ts";
import type { StrayRecoveriesTable } from "./schema.ts";
import type { Tx } from "./store.ts";

export type StrayRecoveryState = "waiting" | "flushing" | "recovered" | "failed" | "returned";

export interface StrayRecovery {
  id: string;
  network: string;
  strayTxId: string;
  forwarderId: string;
  depositAddress: string;
  factory: string;
  /** The ledger currency: the catalog entry, or `<network>:<contract>` for a token the catalog lacks. */
  currency: string;
  /** The token contract; null: the native coin. */
  token: string | null;
  state: StrayRecoveryState;
  flushId: string | null;
  /** What the factory's Flushed event moved (the forwarder's whole balance of the token); null until settled. */
  amountMinor: bigint | null;
  txHash: string | null;
  attempts: number;
  lastError: string | null;
  actor: string;
  returnedBy: string | null;
  returnNote: string | null;
  createdAt: string;
  updatedAt: string;
}

function recoveryOf(r: StrayRecoveriesTable): StrayRecovery {
  return {
    id: r.id,
    network: r.network,
    strayTxId: r.stray_tx_id,
    forwarderId: r.forwarder_id,
    depositAddress: r.deposit_address,
    factory: r.factory,
    currency: r.currency,
    token: r.token,
    state: r.state as StrayRecoveryState,
    flushId: r.flush_id,
    amountMinor: r.amount === null ? null : BigInt(r.amount),
    txHash: r.tx_hash,
    attempts: r.attempts,
    lastError: r.last_error,
    actor: r.actor,
    returnedBy: r.returned_by,
    returnNote: r.return_note,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** What a recovery is asked for: the stray, its forwarder and token, and who asks. */
export type NewStrayRecovery = Pick<
  StrayRecovery,
  "network" | "strayTxId" | "forwarderId" | "depositAddress" | "factory" | "currency" | "token" | "actor"
>;

/**
 * Queues the recovery of a stray once: asked again (a second call, another process racing), the
 * one recovery stays as it is. Answers it and whether this call queued it.
 */
export async function queueStrayRecovery(
  tx: Tx,
  r: NewStrayRecovery,
  now: string,
): Promise<{ recovery: StrayRecovery; queued: boolean }> {
  const inserted = await tx.db
    .insertInto("stray_recoveries")
    .values({
      id: newRowId(),
      network: r.network,
      stray_tx_id: r.strayTxId,
      forwarder_id: r.forwarderId,
      deposit_address: r.depositAddress,
      factory: r.factory.toLowerCase(),
      currency: r.currency,
      token: r.token === null ? null : r.token.toLowerCase(),
      state: "waiting",
      flush_id: null,
      amount: null,
      tx_hash: null,
      attempts: 0,
      last_error: null,
      actor: r.actor,
      returned_by: null,
      return_note: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(["network", "stray_tx_id"]).doNothing())
    .executeTakeFirst();
  const recovery = await findStrayRecovery(tx, r.network, r.strayTxId);
  assert(recovery, "a stray's recovery is there once queued");
  return { recovery, queued: (inserted.numInsertedOrUpdatedRows ?? 0n) > 0n };
}

export async function findStrayRecovery(tx: Tx, network: string, strayTxId: string) {
  const row = await tx.db
    .selectFrom("stray_recoveries")
    .selectAll()
    .where("network", "=", network)
    .where("stray_tx_id", "=", strayTxId)
    .executeTakeFirst();
  return row === undefined ? undefined : recoveryOf(row);
}

/** The recoveries of the strays `keys` (by `<network>:<txId>`), for the operator's list. */
export async function recoveriesOf(
  tx: Tx,
  keys: readonly { network: string; txId: string }[],
): Promise<Map<string, StrayRecovery>> {
  if (keys.length === 0) return new Map();
  const rows = await tx.db
    .selectFrom("stray_recoveries")
    .selectAll()
    .where(
      "stray_tx_id",
      "in",
      keys.map((k) => k.txId),
    )
    .execute();
  return new Map(rows.map((r) => [`${r.network}:${r.stray_tx_id}`, recoveryOf(r)]));
}

/** A network's recoveries at forwarders of `factory` waiting for a flush, oldest first, locked where the store can. */
export async function waitingRecoveries(tx: Tx, network: string, factory: string, limit: number) {
  const rows = await tx.db
    .selectFrom("stray_recoveries")
    .selectAll()
    .where("network", "=", network)
    .where("factory", "=", factory.toLowerCase())
    .where("state", "=", "waiting")
    .orderBy("created_at")
    .orderBy("id")
    .limit(limit)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate().skipLocked())
    .execute();
  return rows.map(recoveryOf);
}

/** In the flush's claim, before the flush is stored: whether the recoveries `ids` are all still waiting (locked where the store can). */
export async function recoveriesStillWaiting(tx: Tx, ids: readonly string[]): Promise<boolean> {
  if (ids.length === 0) return true;
  const still = await tx.db
    .selectFrom("stray_recoveries")
    .select("id")
    .where("id", "in", [...ids])
    .where("state", "=", "waiting")
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .execute();
  return still.length === ids.length;
}

/** In the flush's claim, once the flush is stored: the recoveries `ids` (checked still waiting) join it. */
export async function claimRecoveries(tx: Tx, flushId: string, ids: readonly string[], now: string): Promise<void> {
  if (ids.length === 0) return;
  const claimed = await tx.db
    .updateTable("stray_recoveries")
    .set({ state: "flushing", flush_id: flushId, last_error: null, updated_at: now })
    .where("id", "in", [...ids])
    .where("state", "=", "waiting")
    .executeTakeFirst();
  assert(claimed.numUpdatedRows === BigInt(ids.length), `flush ${flushId} claims the recoveries it locked`);
}

export async function recoveriesOfFlush(tx: Tx, flushId: string): Promise<StrayRecovery[]> {
  const rows = await tx.db
    .selectFrom("stray_recoveries")
    .selectAll()
    .where("flush_id", "=", flushId)
    .where("state", "=", "flushing")
    .orderBy("id")
    .execute();
  return rows.map(recoveryOf);
}

/** Compare-and-set: settles a recovery only while flush `flushId` carries it. */
export async function settleRecovery(
  tx: Tx,
  id: string,
  flushId: string,
  changes: Partial<Pick<StrayRecoveriesTable, "state" | "flush_id" | "amount" | "tx_hash" | "attempts" | "last_error">>,
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .updateTable("stray_recoveries")
    .set({ ...changes, updated_at: now })
    .where("id", "=", id)
    .where("flush_id", "=", flushId)
    .where("state", "=", "flushing")
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Compare-and-set: a recovered stray marked returned (by whom, with the operator's note). */
export async function markReturned(tx: Tx, id: string, by: { actor: string; note: string }, now: string) {
  const result = await tx.db
    .updateTable("stray_recoveries")
    .set({ state: "returned", returned_by: by.actor, return_note: by.note, updated_at: now })
    .where("id", "=", id)
    .where("state", "=", "recovered")
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
