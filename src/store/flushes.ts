// Flushes of forwarder deposits (product §24): confirmed payments queued per forwarder and token, batched into flushes whose transactions the hot wallet's outbox holds; a flush and its deposits change by compare-and-set.
import { forwarderId } from "../domain/forwarders.ts";
import { newRowId } from "../domain/ids.ts";
import { assert } from "../domain/result.ts";
import type { FlushDepositsTable, FlushesTable } from "./schema.ts";
import { type ChainPaymentEvent, confirmedPaymentId } from "./settlement.ts";
import type { Tx } from "./store.ts";

/** Pause before a deposit back from a FlushFailed goes in another batch: doubling from a minute, at most an hour. */
export function depositRetryAt(attempts: number, nowMs: number): string {
  return new Date(nowMs + Math.min(60_000 * 2 ** Math.min(attempts - 1, 10), 3_600_000)).toISOString();
}

/** Times a deposit may come back FlushFailed (or in a reverted flush) before it is left `failed` for the operator. */
export const FLUSH_DEPOSIT_MAX_ATTEMPTS = 5;

export type FlushState = "signed" | "completed" | "reverted" | "dropped";
export type FlushDepositState = "waiting" | "flushing" | "flushed" | "failed";

/** A flush as its purpose keeps it: its transactions are the outbox's (purpose `flush`, purpose id = its id). */
export interface Flush {
  id: string;
  network: string;
  factory: string;
  state: FlushState;
}

export interface FlushDeposit {
  id: string;
  /** The invoice payment flushed, or the customer's deposit (product §30): the row's one source, by its id. */
  paymentId: string;
  /** The invoice of a payment; null for a customer's deposit (depositId). */
  invoiceId: string | null;
  depositId: string | null;
  network: string;
  forwarderId: string;
  depositAddress: string;
  factory: string;
  currency: string;
  token: string | null;
  amountMinor: bigint;
  state: FlushDepositState;
  flushId: string | null;
  gasShare: bigint;
  attempts: number;
  createdAt: string;
}

function flushOf(r: Pick<FlushesTable, "id" | "network" | "factory" | "state">): Flush {
  return { id: r.id, network: r.network, factory: r.factory, state: r.state as FlushState };
}

function depositOf(r: FlushDepositsTable): FlushDeposit {
  return {
    id: r.id,
    paymentId: r.payment_id ?? (r.deposit_id as string),
    invoiceId: r.invoice_id,
    depositId: r.deposit_id ?? null,
    network: r.network,
    forwarderId: r.forwarder_id,
    depositAddress: r.deposit_address,
    factory: r.factory,
    currency: r.currency,
    token: r.token,
    amountMinor: BigInt(r.amount),
    state: r.state as FlushDepositState,
    flushId: r.flush_id,
    gasShare: BigInt(r.gas_share),
    attempts: r.attempts,
    createdAt: r.created_at,
  };
}

/** The forwarder invoice a confirmed payment went to, and the catalog entry (and its token) it came in. */
export interface ForwarderTarget {
  invoiceId: string;
  depositAddress: string;
  factory: string;
  currency: string;
  token: string | null;
}

/** Queues a confirmed payment to a forwarder for a flush; once per payment (a second call changes nothing). */
export async function queueFlushDeposit(tx: Tx, event: ChainPaymentEvent, target: ForwarderTarget, now: string) {
  const paymentId = await confirmedPaymentId(tx, event);
  if (paymentId === null) return;
  await tx.db
    .insertInto("flush_deposits")
    .values({
      id: newRowId(),
      payment_id: paymentId,
      invoice_id: target.invoiceId,
      network: event.place.network,
      forwarder_id: forwarderId(target.invoiceId),
      deposit_address: target.depositAddress,
      factory: target.factory.toLowerCase(),
      currency: target.currency,
      token: target.token,
      amount: event.amountMinor.toString(),
      state: "waiting",
      flush_id: null,
      outcome: null,
      flushed_amount: null,
      gas_share: "0",
      attempts: 0,
      next_attempt_at: now,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("payment_id").doNothing())
    .execute();
}

/** A confirmed deposit to a customer's forwarder (product §30), queued for a flush like an invoice's; once per deposit. */
export interface CustomerFlushDeposit {
  depositId: string;
  network: string;
  forwarderId: string;
  depositAddress: string;
  factory: string;
  /** The catalog entry it came in, its token (null: the native coin) and its amount in the entry's units. */
  currency: string;
  token: string | null;
  amountMinor: bigint;
}

export async function queueCustomerFlushDeposit(tx: Tx, d: CustomerFlushDeposit, now: string): Promise<void> {
  await tx.db
    .insertInto("flush_deposits")
    .values({
      id: newRowId(),
      payment_id: null,
      invoice_id: null,
      deposit_id: d.depositId,
      network: d.network,
      forwarder_id: d.forwarderId,
      deposit_address: d.depositAddress,
      factory: d.factory.toLowerCase(),
      currency: d.currency,
      token: d.token,
      amount: d.amountMinor.toString(),
      state: "waiting",
      flush_id: null,
      outcome: null,
      flushed_amount: null,
      gas_share: "0",
      attempts: 0,
      next_attempt_at: now,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("deposit_id").doNothing())
    .execute();
}

/** A network's deposits at forwarders of `factory` waiting for a flush and due at `now`, oldest first, locked for this transaction where the store can. */
export async function waitingDeposits(
  tx: Tx,
  network: string,
  factory: string,
  now: string,
  limit: number,
): Promise<FlushDeposit[]> {
  const rows = await tx.db
    .selectFrom("flush_deposits")
    .selectAll()
    .where("network", "=", network)
    .where("factory", "=", factory.toLowerCase())
    .where("state", "=", "waiting")
    .where("next_attempt_at", "<=", now)
    .orderBy("created_at")
    .orderBy("id")
    .limit(limit)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate().skipLocked())
    .execute();
  return rows.map(depositOf);
}

export async function findFlush(tx: Tx, id: string): Promise<Flush | undefined> {
  const row = await tx.db
    .selectFrom("flushes")
    .select(["id", "network", "factory", "state"])
    .where("id", "=", id)
    .executeTakeFirst();
  return row === undefined ? undefined : flushOf(row);
}

/** How the lastError of a deposit or stray recovery waiting for the hot wallet's gas starts (what the flusher matches to log once). */
export const WAITING_FOR_GAS = "waiting for gas";

/**
 * Sets the lastError of the deposits and stray recoveries still `waiting` among `ids` to
 * `message`; answers how many of them did not already say they wait for gas (`prefix`): the
 * flusher logs when they start waiting.
 */
export async function markWaitingForGas(
  tx: Tx,
  ids: { deposits: readonly string[]; recoveries: readonly string[] },
  text: { prefix: string; message: string },
  now: string,
): Promise<number> {
  let fresh = 0;
  const tables = [
    ["flush_deposits", ids.deposits],
    ["stray_recoveries", ids.recoveries],
  ] as const;
  for (const [table, some] of tables) {
    if (some.length === 0) continue;
    const counted = await tx.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("id", "in", [...some])
      .where("state", "=", "waiting")
      .where((eb) => eb.or([eb("last_error", "is", null), eb("last_error", "not like", `${text.prefix}%`)]))
      .executeTakeFirstOrThrow();
    fresh += Number(counted.n);
    await tx.db
      .updateTable(table)
      .set({ last_error: text.message, updated_at: now })
      .where("id", "in", [...some])
      .where("state", "=", "waiting")
      .execute();
  }
  return fresh;
}

/**
 * Stores a flush and claims its deposits, when each is still `waiting` (compare-and-set, the rows
 * locked where the store can): answers false, writing nothing, when one moved meanwhile.
 */
export async function claimFlush(
  tx: Tx,
  flush: Pick<Flush, "id" | "network" | "factory">,
  depositIds: readonly string[],
  now: string,
): Promise<boolean> {
  // A flush of stray recoveries alone (strayRecoveries.ts) claims no deposit.
  const still =
    depositIds.length === 0
      ? []
      : await tx.db
          .selectFrom("flush_deposits")
          .select("id")
          .where("id", "in", [...depositIds])
          .where("state", "=", "waiting")
          .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
          .execute();
  if (still.length !== depositIds.length) return false;
  await tx.db
    .insertInto("flushes")
    .values({
      id: flush.id,
      network: flush.network,
      factory: flush.factory.toLowerCase(),
      state: "signed",
      gas_used: null,
      gas_cost: null,
      last_error: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  if (depositIds.length === 0) return true;
  const claimed = await tx.db
    .updateTable("flush_deposits")
    .set({ state: "flushing", flush_id: flush.id, last_error: null, updated_at: now })
    .where("id", "in", [...depositIds])
    .where("state", "=", "waiting")
    .executeTakeFirst();
  assert(claimed.numUpdatedRows === BigInt(depositIds.length), `flush ${flush.id} claims the deposits it locked`);
  return true;
}

export async function depositsOfFlush(tx: Tx, flushId: string): Promise<FlushDeposit[]> {
  const rows = await tx.db
    .selectFrom("flush_deposits")
    .selectAll()
    .where("flush_id", "=", flushId)
    .orderBy("id")
    .execute();
  return rows.map(depositOf);
}

/** Compare-and-set: changes a flush only while it is `signed` (another process may have settled it). */
export async function moveFlush(
  tx: Tx,
  id: string,
  changes: Partial<Omit<FlushesTable, "id" | "network" | "created_at">>,
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .updateTable("flushes")
    .set({ ...changes, updated_at: now })
    .where("id", "=", id)
    .where("state", "=", "signed")
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Compare-and-set: settles a deposit only while the flush `flushId` carries it. */
export async function settleDeposit(
  tx: Tx,
  id: string,
  flushId: string,
  changes: Partial<Omit<FlushDepositsTable, "id" | "payment_id" | "created_at">>,
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .updateTable("flush_deposits")
    .set({ ...changes, updated_at: now })
    .where("id", "=", id)
    .where("flush_id", "=", flushId)
    .where("state", "=", "flushing")
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** What the operator sees of a network's flushes: deposits not yet flushed, the oldest one's age, and those left to them. */
export interface FlushOverview {
  /** Confirmed forwarder deposits waiting for a flush or in one not yet mined. */
  waitingDeposits: number;
  /** When the oldest of them was queued (null: none). */
  oldestWaitingSince: string | null;
  /** Deposits whose flush failed past the bound (FlushFailed): the operator's to look at. */
  failedDeposits: number;
}

export async function flushOverview(tx: Tx, network: string): Promise<FlushOverview> {
  const rows = await tx.db
    .selectFrom("flush_deposits")
    .select(["state", (eb) => eb.fn.countAll<string | number>().as("n"), (eb) => eb.fn.min("created_at").as("oldest")])
    .where("network", "=", network)
    .where("state", "in", ["waiting", "flushing", "failed"])
    .groupBy("state")
    .execute();
  let waiting = 0;
  let oldest: string | null = null;
  let failed = 0;
  for (const r of rows) {
    if (r.state === "failed") {
      failed = Number(r.n);
      continue;
    }
    waiting += Number(r.n);
    const at = r.oldest as string | null;
    if (at !== null && (oldest === null || at < oldest)) oldest = at;
  }
  return { waitingDeposits: waiting, oldestWaitingSince: oldest, failedDeposits: failed };
}

/** A deposit as the operator lists it: its flush row and the attempts behind it. */
export interface FlushDepositView extends FlushDeposit {
  outcome: string | null;
  flushedAmount: bigint | null;
  nextAttemptAt: string;
  lastError: string | null;
  updatedAt: string;
}

function depositViewOf(r: FlushDepositsTable): FlushDepositView {
  return {
    ...depositOf(r),
    outcome: r.outcome,
    flushedAmount: r.flushed_amount === null ? null : BigInt(r.flushed_amount),
    nextAttemptAt: r.next_attempt_at,
    lastError: r.last_error,
    updatedAt: r.updated_at,
  };
}

/** Deposits in `state` (optionally of one network), newest first, keyset-paged by the time-ordered id; `limit` bounds the page. */
export async function listFlushDeposits(
  tx: Tx,
  filter: { state: FlushDepositState; network?: string | undefined; before?: string | undefined },
  limit: number,
): Promise<FlushDepositView[]> {
  let query = tx.db.selectFrom("flush_deposits").selectAll().where("state", "=", filter.state);
  if (filter.network !== undefined) query = query.where("network", "=", filter.network);
  if (filter.before !== undefined) query = query.where("id", "<", filter.before);
  const rows = await query.orderBy("id", "desc").limit(limit).execute();
  return rows.map(depositViewOf);
}

/** The flush deposit of an invoice payment or of a customer's deposit, by that one's id. */
export async function findFlushDeposit(tx: Tx, paymentId: string): Promise<FlushDepositView | undefined> {
  const row = await tx.db
    .selectFrom("flush_deposits")
    .selectAll()
    .where((eb) => eb.or([eb("payment_id", "=", paymentId), eb("deposit_id", "=", paymentId)]))
    .executeTakeFirst();
  return row === undefined ? undefined : depositViewOf(row);
}

/**
 * Compare-and-set: puts a `failed` deposit back to `waiting`, due now, with its attempts reset (the
 * flusher's bound counts afresh) and out of the flush it failed in, and records who did it and what
 * it had. Answers false, writing nothing, when it is not `failed` (another retry won, or it moved).
 */
export async function retryFailedDeposit(tx: Tx, deposit: FlushDepositView, actor: string, now: string) {
  const moved = await tx.db
    .updateTable("flush_deposits")
    .set({ state: "waiting", flush_id: null, attempts: 0, next_attempt_at: now, updated_at: now })
    .where("id", "=", deposit.id)
    .where("state", "=", "failed")
    .executeTakeFirst();
  if (moved.numUpdatedRows !== 1n) return false;
  await tx.db
    .insertInto("flush_deposit_retries")
    .values({
      id: newRowId(),
      deposit_id: deposit.id,
      payment_id: deposit.paymentId,
      actor,
      attempts_before: deposit.attempts,
      last_error_before: deposit.lastError,
      created_at: now,
    })
    .execute();
  return true;
}
