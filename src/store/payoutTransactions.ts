// Live payouts' chain side: queued payouts taken and reported on, their gas ledgered, and the operator's per-network fee settings (every hot-wallet transaction's, product §19).
import { WEI_PER_GWEI } from "../domain/hotTransaction.ts";
import { movement, SYSTEM_ACCOUNTS, transfer } from "../domain/ledger.ts";
import { assert } from "../domain/result.ts";
import { nextHotNonce } from "./hotTransactions.ts";
import { postMovement } from "./ledger.ts";
import { type NonceOverview, nonceOverview } from "./nonceFills.ts";
import type { Payout } from "./payouts.ts";
import type { Tx } from "./store.ts";

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

/** A queued payout whose network's signer did not sign (down, slow, refusing): it goes once the signer signs. */
export const AWAITING_SIGNER = "awaiting_signer";

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
export async function markForeignNonce(tx: Tx, requestKey: string, nonce: number, now: string): Promise<boolean> {
  const result = await tx.db
    .updateTable("payouts")
    .set({
      state: "needs_reconciliation",
      last_error: `nonce ${nonce} of the hot wallet was used by a transaction the service did not store`,
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
      .selectFrom("hot_transactions")
      .select((eb) => eb.fn.count<string>("purpose_id").distinct().as("n"))
      .where("network", "=", network)
      .where("purpose", "=", "payout")
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
