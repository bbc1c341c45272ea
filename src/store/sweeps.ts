// Sweeps of confirmed deposits to the hot wallet (product §12): one row per payment, its own transaction signed and stored before broadcast, retried with a bound (a token deposit's gas funding is the hot wallet's outbox's, purpose `funding`).
import { newRowId } from "../domain/ids.ts";
import type { DepositInvoice } from "./chainPayments.ts";
import type { SweepsTable } from "./schema.ts";
import { type ChainPaymentEvent, confirmedPaymentId } from "./settlement.ts";
import type { Tx } from "./store.ts";

/** Attempts before a sweep is left `failed` for the operator (the money stays on the deposit address). */
export const SWEEP_MAX_ATTEMPTS = 10;

export type SweepState = "pending" | "funding" | "sweeping" | "completed" | "failed";

export interface Sweep {
  id: string;
  paymentId: string;
  invoiceId: string;
  network: string;
  currency: string;
  depositIndex: number;
  depositAddress: string;
  amountMinor: bigint;
  state: SweepState;
  sweepTx: string | null;
  sweepSigned: string | null;
  sweptAmount: bigint | null;
  gasCost: bigint | null;
  attempts: number;
  nextAttemptAt: string;
  lastError: string | null;
}

function fromRow(r: SweepsTable): Sweep {
  return {
    id: r.id,
    paymentId: r.payment_id,
    invoiceId: r.invoice_id,
    network: r.network,
    currency: r.currency,
    depositIndex: Number(r.deposit_index),
    depositAddress: r.deposit_address,
    amountMinor: BigInt(r.amount),
    state: r.state as SweepState,
    sweepTx: r.sweep_tx,
    sweepSigned: r.sweep_signed,
    sweptAmount: r.swept_amount === null ? null : BigInt(r.swept_amount),
    gasCost: r.gas_cost === null ? null : BigInt(r.gas_cost),
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
  };
}

/** Queues the sweep of a confirmed chain payment; once per payment (a second call changes nothing). */
export async function createSweepFor(
  tx: Tx,
  event: ChainPaymentEvent,
  /** A derived address's invoice: a sweep signs with its deposit key (a forwarder has none). */
  target: DepositInvoice & { depositIndex: number },
  now: string,
) {
  const paymentId = await confirmedPaymentId(tx, event);
  if (paymentId === null) return;
  await tx.db
    .insertInto("sweeps")
    .values({
      id: newRowId(),
      payment_id: paymentId,
      invoice_id: target.invoiceId,
      network: event.place.network,
      currency: target.currency,
      deposit_index: target.depositIndex,
      deposit_address: target.depositAddress,
      amount: event.amountMinor.toString(),
      swept_amount: null,
      state: "pending",
      sweep_tx: null,
      sweep_signed: null,
      gas_cost: null,
      attempts: 0,
      next_attempt_at: now,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("payment_id").doNothing())
    .execute();
}

/** Open sweeps of a network that are due, oldest first, locked for this transaction where the store can. */
export async function dueSweeps(tx: Tx, network: string, now: string, limit: number): Promise<Sweep[]> {
  const rows = await tx.db
    .selectFrom("sweeps")
    .selectAll()
    .where("network", "=", network)
    .where("state", "in", ["pending", "funding", "sweeping"])
    .where("next_attempt_at", "<=", now)
    .orderBy("next_attempt_at")
    .limit(limit)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate().skipLocked())
    .execute();
  return rows.map(fromRow);
}

export async function findSweep(tx: Tx, id: string): Promise<Sweep | null> {
  const r = await tx.db
    .selectFrom("sweeps")
    .selectAll()
    .where("id", "=", id)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  return r ? fromRow(r) : null;
}

export async function updateSweep(
  tx: Tx,
  id: string,
  changes: Partial<Omit<SweepsTable, "id" | "payment_id" | "created_at">>,
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("sweeps")
    .set({ ...changes, updated_at: now })
    .where("id", "=", id)
    .execute();
}

/**
 * Compare-and-set: changes a sweep only while it is still in `from` (another process, or a batch
 * that outlived its lease, may have moved it). Answers whether it changed.
 */
export async function moveSweep(
  tx: Tx,
  id: string,
  from: SweepState,
  changes: Partial<Omit<SweepsTable, "id" | "payment_id" | "created_at">>,
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .updateTable("sweeps")
    .set({ ...changes, updated_at: now })
    .where("id", "=", id)
    .where("state", "=", from)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function sweepsOfInvoice(tx: Tx, invoiceId: string): Promise<Sweep[]> {
  const rows = await tx.db.selectFrom("sweeps").selectAll().where("invoice_id", "=", invoiceId).execute();
  return rows.map(fromRow);
}
