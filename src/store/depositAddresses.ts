// Customers' deposit addresses and their deposits (product §30): one address per merchant, customer and ticker, found by address for the scanner; deposits keyed by (network, tx id), changed by compare-and-set on their status.
import type { Currency } from "../domain/currencies.ts";
import type {
  DepositObject,
  DepositRefundObject,
  DepositScreening,
  DepositStatus,
} from "../domain/depositAddresses.ts";
import { newRowId } from "../domain/ids.ts";
import type { ChainPaymentPlace } from "../domain/invoices.ts";
import { formatAmount } from "../domain/money.ts";
import { assert, type Result as Outcome } from "../domain/result.ts";
import { findCurrency } from "./currencies.ts";
import { type ListError, merchantPage, type Page, type PageWindow } from "./keyset.ts";
import { latestDepositRefund } from "./refunds.ts";
import type { DepositAddressesTable, DepositsTable } from "./schema.ts";
import type { Tx } from "./store.ts";

type Result<T> = Outcome<T, ListError>;

export type DepositAddressRow = DepositAddressesTable;
export type DepositRow = DepositsTable;

/** A transfer of catalog entry `entry` to a customer's address, as the scanner read it. */
export interface CustomerTransfer {
  address: DepositAddressRow;
  entry: Currency;
  place: ChainPaymentPlace;
  amountMinor: bigint;
  fromAddress: string;
  confirmed: boolean;
  screening: DepositScreening;
}

/** How the scanner records, confirms and undoes customers' deposits: the use cases of app/customerDeposits.ts, handed in by the worker. */
export interface CustomerDeposits {
  record(tx: Tx, transfer: CustomerTransfer, now: string): Promise<boolean>;
  confirm(tx: Tx, row: DepositRow, now: string): Promise<boolean>;
  reverse(tx: Tx, network: string, forkBlock: bigint, now: string): Promise<number>;
}

/** Inserts the address unless the merchant's customer has one in this currency (a racing request made it), then reads the one stored. */
export async function insertDepositAddress(tx: Tx, row: DepositAddressRow): Promise<DepositAddressRow> {
  await tx.db
    .insertInto("deposit_addresses")
    .values(row)
    .onConflict((oc) => oc.columns(["merchant_id", "customer", "currency"]).doNothing())
    .execute();
  return tx.db
    .selectFrom("deposit_addresses")
    .selectAll()
    .where("merchant_id", "=", row.merchant_id)
    .where("customer", "=", row.customer)
    .where("currency", "=", row.currency)
    .executeTakeFirstOrThrow();
}

export async function findDepositAddress(tx: Tx, merchantId: string, id: string): Promise<DepositAddressRow | null> {
  const row = await tx.db
    .selectFrom("deposit_addresses")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .executeTakeFirst();
  return row ?? null;
}

export async function findDepositAddressById(tx: Tx, id: string): Promise<DepositAddressRow | null> {
  return (await tx.db.selectFrom("deposit_addresses").selectAll().where("id", "=", id).executeTakeFirst()) ?? null;
}

/** A page of the merchant's addresses, newest first; `customer` narrows to one customer's. */
export function listDepositAddresses(
  tx: Tx,
  merchantId: string,
  filter: PageWindow & { customer?: string | undefined },
): Promise<Result<Page<DepositAddressRow>>> {
  return merchantPage(
    tx,
    { table: "deposit_addresses", idColumn: "id", columns: { createdAt: "created_at", id: "id" }, noun: "an address" },
    merchantId,
    filter,
    tx.db
      .selectFrom("deposit_addresses")
      .selectAll()
      .where("merchant_id", "=", merchantId)
      .$if(filter.customer !== undefined, (qb) => qb.where("customer", "=", filter.customer as string)),
  );
}

export async function setDepositAddressActive(
  tx: Tx,
  merchantId: string,
  id: string,
  active: boolean,
  now: string,
): Promise<DepositAddressRow | null> {
  const row = await tx.db
    .updateTable("deposit_addresses")
    .set({ active: active ? 1 : 0, updated_at: now })
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .returningAll()
    .executeTakeFirst();
  return row ?? null;
}

/** The customers' addresses among `addresses` (checksummed): the scanner's one indexed lookup per batch, in bounded chunks. */
export async function depositAddressesAt(tx: Tx, addresses: readonly string[]): Promise<DepositAddressRow[]> {
  const unique = [...new Set(addresses)];
  const found: DepositAddressRow[] = [];
  for (let start = 0; start < unique.length; start += 500) {
    const rows = await tx.db
      .selectFrom("deposit_addresses")
      .selectAll()
      .where("address", "in", unique.slice(start, start + 500))
      .execute();
    found.push(...rows);
  }
  return found;
}

/** Records a transfer once per (network, tx id); answers the stored row (the one a rescan or another pass made, if any). */
export async function insertDeposit(tx: Tx, row: DepositRow): Promise<DepositRow> {
  await tx.db
    .insertInto("deposits")
    .values(row)
    .onConflict((oc) => oc.columns(["network", "tx_id"]).doNothing())
    .execute();
  return tx.db
    .selectFrom("deposits")
    .selectAll()
    .where("network", "=", row.network)
    .where("tx_id", "=", row.tx_id)
    .executeTakeFirstOrThrow();
}

/** Compare-and-set: changes a deposit only while it is in `from`; answers the row after, or null when it moved meanwhile. */
export async function moveDeposit(
  tx: Tx,
  id: string,
  from: DepositStatus,
  changes: Partial<Omit<DepositRow, "id" | "created_at">>,
  now: string,
): Promise<DepositRow | null> {
  const row = await tx.db
    .updateTable("deposits")
    .set({ ...changes, updated_at: now })
    .where("id", "=", id)
    .where("status", "=", from)
    .returningAll()
    .executeTakeFirst();
  return row ?? null;
}

/** Unconfirmed deposits of a network mined at or before `maxBlock`, oldest first, bounded. */
export async function unconfirmedDepositsUpTo(tx: Tx, network: string, maxBlock: bigint, limit: number) {
  return tx.db
    .selectFrom("deposits")
    .selectAll()
    .where("network", "=", network)
    .where("confirmed", "=", 0)
    .where("status", "=", "pending")
    .where("block_number", "<=", maxBlock.toString())
    .orderBy("block_number")
    .limit(limit)
    .execute();
}

/** Unconfirmed deposits in blocks a reorganisation replaced (after `forkBlock`). */
export async function pendingDepositsAfter(tx: Tx, network: string, forkBlock: bigint): Promise<DepositRow[]> {
  return tx.db
    .selectFrom("deposits")
    .selectAll()
    .where("network", "=", network)
    .where("confirmed", "=", 0)
    .where("status", "=", "pending")
    .where("block_number", ">", forkBlock.toString())
    .execute();
}

export async function findDeposit(tx: Tx, merchantId: string, id: string): Promise<DepositRow | null> {
  const row = await tx.db
    .selectFrom("deposits")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .executeTakeFirst();
  return row ?? null;
}

export interface DepositListFilter extends PageWindow {
  depositAddressId?: string | undefined;
  status?: DepositStatus | undefined;
  network?: string | undefined;
}

/** A page of the merchant's deposits, newest first, filtered by address, status or network. */
export function listDeposits(tx: Tx, merchantId: string, filter: DepositListFilter): Promise<Result<Page<DepositRow>>> {
  return merchantPage(
    tx,
    { table: "deposits", idColumn: "id", columns: { createdAt: "created_at", id: "id" }, noun: "a deposit" },
    merchantId,
    filter,
    tx.db
      .selectFrom("deposits")
      .selectAll()
      .where("merchant_id", "=", merchantId)
      .$if(filter.depositAddressId !== undefined, (qb) =>
        qb.where("deposit_address_id", "=", filter.depositAddressId as string),
      )
      .$if(filter.status !== undefined, (qb) => qb.where("status", "=", filter.status as DepositStatus))
      .$if(filter.network !== undefined, (qb) => qb.where("network", "=", filter.network as string)),
  );
}

/**
 * A deposit as the API and its events answer it, its amounts in whole units of its entry
 * (`decimals`), with its latest refund (store/refunds.ts latestDepositRefunds; null if never refunded).
 */
export function depositObject(
  row: DepositRow,
  address: DepositAddressRow,
  decimals: number,
  refund: DepositRefundObject | null,
): DepositObject {
  const amount = (minor: string | null) => (minor === null ? null : formatAmount(BigInt(minor), decimals));
  return {
    id: row.id,
    depositAddressId: row.deposit_address_id,
    customer: address.customer,
    currency: address.currency,
    entry: row.currency,
    network: row.network,
    address: address.address,
    txHash: row.tx_hash,
    logIndex: row.log_index === null ? null : Number(row.log_index),
    fromAddress: row.from_address,
    amount: formatAmount(BigInt(row.amount), decimals),
    merchantFee: amount(row.merchant_fee),
    networkFee: amount(row.network_fee),
    creditedAmount: amount(row.credited_amount),
    status: row.status as DepositStatus,
    confirmed: row.confirmed === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    refund,
  };
}

/** A deposit's object as it now stands, and its address (whose callbackUrl its events go to). */
export async function currentDepositObject(
  tx: Tx,
  depositId: string,
): Promise<{ deposit: DepositObject; address: DepositAddressRow }> {
  const row = await findDepositById(tx, depositId);
  assert(row !== null, `deposit ${depositId} exists`);
  const address = await findDepositAddressById(tx, row.deposit_address_id);
  const entry = await findCurrency(tx, row.currency);
  assert(address !== null && entry !== null, `deposit ${depositId} has its address and entry`);
  const refund = await latestDepositRefund(tx, depositId);
  return { deposit: depositObject(row, address, entry.decimals, refund), address };
}

/** Whether any customer has an address in `ticker`: the scanner then reads block bodies for its native coin. */
export async function anyDepositAddressIn(tx: Tx, ticker: string): Promise<boolean> {
  const row = await tx.db
    .selectFrom("deposit_addresses")
    .select("id")
    .where("currency", "=", ticker)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Any merchant's deposit by id: the operator's decision and the screening worker read it so. */
export async function findDepositById(tx: Tx, id: string): Promise<DepositRow | null> {
  return (await tx.db.selectFrom("deposits").selectAll().where("id", "=", id).executeTakeFirst()) ?? null;
}

/** The operator's queue: every merchant's deposits in `status`, oldest first (the longest waiting on top), bounded. */
export async function depositsInStatus(tx: Tx, status: DepositStatus, limit: number): Promise<DepositRow[]> {
  return tx.db
    .selectFrom("deposits")
    .selectAll()
    .where("status", "=", status)
    .orderBy("created_at")
    .orderBy("id")
    .limit(limit)
    .execute();
}

/** The audit row of a decision on a deposit (operator: clear/block; merchant: credit/refund). */
export async function recordDepositDecision(
  tx: Tx,
  decision: { depositId: string; decision: string; actor: string; statusAfter: DepositStatus; reason: string | null },
  now: string,
): Promise<void> {
  await tx.db
    .insertInto("deposit_decisions")
    .values({
      id: newRowId(),
      deposit_id: decision.depositId,
      decision: decision.decision,
      actor: decision.actor,
      status_after: decision.statusAfter,
      reason: decision.reason,
      created_at: now,
    })
    .execute();
}

export async function depositDecisions(tx: Tx, depositId: string) {
  return tx.db
    .selectFrom("deposit_decisions")
    .selectAll()
    .where("deposit_id", "=", depositId)
    .orderBy("created_at")
    .execute();
}

/** A deposit whose sender screening could not answer yet, as the screening worker takes it. */
export interface DepositWaitingScreening {
  id: string;
  fromAddress: string;
  attempts: number;
}

/**
 * Up to `limit` deposits whose sender is still `pending` screening and due for an attempt (never
 * tried, or their backoff passed), oldest first: unconfirmed ones, and confirmed ones in aml_check.
 */
export async function depositsDueForScreening(tx: Tx, now: string, limit: number): Promise<DepositWaitingScreening[]> {
  const rows = await tx.db
    .selectFrom("deposits")
    .select(["id", "from_address", "screening_attempts"])
    .where("screening", "=", "pending")
    .where("status", "in", ["pending", "aml_check"])
    .where((eb) => eb.or([eb("screen_after", "is", null), eb("screen_after", "<=", now)]))
    .orderBy("created_at")
    .orderBy("id")
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: r.id, fromAddress: r.from_address, attempts: Number(r.screening_attempts) }));
}

/** An attempt without an answer: counted, the next not before `after`; only from the count read, so two racing workers count it once. */
export async function deferDepositScreening(
  tx: Tx,
  deposit: Pick<DepositWaitingScreening, "id" | "attempts">,
  after: string,
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("deposits")
    .set({ screening_attempts: deposit.attempts + 1, screen_after: after, updated_at: now })
    .where("id", "=", deposit.id)
    .where("screening", "=", "pending")
    .where("screening_attempts", "=", deposit.attempts)
    .execute();
}

/** Compare-and-set of a `pending` screening to its answer; answers the row after, or null when another worker answered first. */
export async function settleDepositScreening(
  tx: Tx,
  id: string,
  screening: Exclude<DepositScreening, "pending">,
  now: string,
): Promise<DepositRow | null> {
  const row = await tx.db
    .updateTable("deposits")
    .set({ screening, screen_after: null, updated_at: now })
    .where("id", "=", id)
    .where("screening", "=", "pending")
    .returningAll()
    .executeTakeFirst();
  return row ?? null;
}

/** For the operator's screening overview: deposits whose sender waits for screening, and deposits waiting in aml_check. */
export async function depositScreeningCounts(tx: Tx): Promise<{ waiting: number; amlCheck: number }> {
  const count = async (where: "waiting" | "aml_check") => {
    const row = await tx.db
      .selectFrom("deposits")
      .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
      .$if(where === "waiting", (qb) =>
        qb.where("screening", "=", "pending").where("status", "in", ["pending", "aml_check"]),
      )
      .$if(where === "aml_check", (qb) => qb.where("status", "=", "aml_check"))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  };
  return { waiting: await count("waiting"), amlCheck: await count("aml_check") };
}

/**
 * The latest deposits to one address, newest first, at most `limit`: what its payer's page shows.
 * Walks the merchant's index (merchant, created_at, id) as the list route filtered by address does;
 * deposits recorded at the same instant (one scan) are in the chain's order.
 */
export function recentDepositsTo(tx: Tx, address: DepositAddressRow, limit: number): Promise<DepositRow[]> {
  return (
    tx.db
      .selectFrom("deposits")
      .selectAll()
      .where("merchant_id", "=", address.merchant_id)
      .where("deposit_address_id", "=", address.id)
      .orderBy("created_at", "desc")
      // One scan records a batch at one instant: the chain's order breaks the tie.
      .orderBy("block_number", "desc")
      .orderBy("log_index", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute()
  );
}
