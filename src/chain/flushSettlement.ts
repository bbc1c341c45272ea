// Flushes as a purpose of the hot wallet's outbox (product §24, §26), settle side: once a flush's transaction is deep, its gas split over its deposits and stray recoveries in the ledger, each deposit flushed or back waiting from the factory's logs, each recovery the operator's stray funds; its nonce lost, they wait again.
import type { ChainReceipt } from "../domain/chain.ts";
import { type Address, splitBatchFee } from "../domain/forwarders.ts";
import { movement, SYSTEM_ACCOUNTS, strayFundsAccount, transfer } from "../domain/ledger.ts";
import { assertOk } from "../domain/result.ts";
import {
  depositRetryAt,
  depositsOfFlush,
  FLUSH_DEPOSIT_MAX_ATTEMPTS,
  type Flush,
  type FlushDeposit,
  findFlush,
  moveFlush,
  settleDeposit,
} from "../store/flushes.ts";
import { type HotTransaction, postOperatorGas } from "../store/hotTransactions.ts";
import { postMovement } from "../store/ledger.ts";
import type { Tx } from "../store/store.ts";
import { recoveriesOfFlush, type StrayRecovery, settleRecovery } from "../store/strayRecoveries.ts";
import { type FlushOutcome, flushOutcome } from "./forwarders.ts";
import type { HotTxHandler } from "./outboxFollowing.ts";

/**
 * The flushes' handler of their outbox transactions (purpose id: the flush's id). `nativeCurrency`
 * names the ledger currency of the gas (the catalog's native coin of the network; ETH when none).
 * Settlement is a compare-and-set on the flush (`signed`), as the outbox's on its rows: two
 * followers (the scanner's flush pass and the payout worker's) settle it once.
 */
export function flushHandler(nativeCurrency: string | null): HotTxHandler {
  const ticker = nativeCurrency ?? "ETH";
  return {
    settle: (tx, mined, receipt, at) => settleFlush(tx, { mined, receipt, ticker }, at),
    lost: async (tx, group, at) => {
      const first = group[0];
      if (first !== undefined) await releaseDeposits(tx, first, at);
    },
  };
}

/**
 * A mined flush: its gas (success or revert, the hot wallet paid it) split over its deposits and
 * posted to the operator's network fees, one movement per deposit naming the flush; each deposit
 * Flushed is done, FlushFailed (or in a reverted flush) waits for a later batch within its bound.
 */
async function settleFlush(
  tx: Tx,
  settled: { mined: HotTransaction; receipt: ChainReceipt; ticker: string },
  now: string,
): Promise<void> {
  const { mined, receipt } = settled;
  const flush = await findFlush(tx, mined.purposeId);
  if (flush === undefined) return;
  const gas = receipt.gasUsed * receipt.effectiveGasPrice;
  const succeeded = receipt.status === "success";
  const done = await moveFlush(
    tx,
    flush.id,
    {
      state: succeeded ? "completed" : "reverted",
      gas_used: receipt.gasUsed.toString(),
      gas_cost: gas.toString(),
      last_error: succeeded ? null : "the flush transaction reverted: its deposits wait for another flush",
    },
    now,
  );
  if (!done) return;
  const deposits = await depositsOfFlush(tx, flush.id);
  const recoveries = await recoveriesOfFlush(tx, flush.id);
  if (deposits.length + recoveries.length === 0) return;
  // Exact to the wei: equal shares, the remainder's wei one each to the first deposits by id (then the recoveries).
  const shares = splitBatchFee(gas, deposits.length + recoveries.length);
  const outcome = succeeded
    ? flushOutcome(flush.factory as Address, receipt.logs ?? [], mined.fromAddress as Address)
    : null;
  const own = ownAmounts(deposits, outcome);
  for (const [i, deposit] of deposits.entries()) {
    const share = shares[i] ?? 0n;
    await settleOne(tx, flush, deposit, { outcome, flushed: own[i] ?? 0n, share }, now);
    await postFlushGas(tx, { flush, nonce: mined.nonce, ticker: settled.ticker }, deposit, share, now);
  }
  const recovered = recoveredAmounts(deposits, own, recoveries, outcome);
  for (const [i, recovery] of recoveries.entries()) {
    const share = shares[deposits.length + i] ?? 0n;
    const moved = { outcome, recovered: recovered[i] ?? 0n, share, hash: mined.hash, ticker: settled.ticker };
    await settleRecoveryOf(tx, flush, recovery, moved, now);
  }
}

/**
 * What each stray recovery moved: its forwarder's Flushed amount of its token less what the
 * flush's deposits took of it; the first recovery of a forwarder and token takes all that is left
 * (one Flushed entry moves the whole balance, other strays of the same token with it).
 */
export function recoveredAmounts(
  deposits: readonly Pick<FlushDeposit, "depositAddress" | "token">[],
  own: readonly bigint[],
  recoveries: readonly Pick<StrayRecovery, "depositAddress" | "token">[],
  outcome: Pick<FlushOutcome, "moved"> | null,
): bigint[] {
  const left = new Map<string, bigint>();
  for (const e of outcome?.moved ?? []) {
    const key = moveKey(e.forwarder, e.token);
    left.set(key, (left.get(key) ?? 0n) + e.amount);
  }
  for (const [i, d] of deposits.entries()) {
    const key = moveKey(d.depositAddress, d.token);
    left.set(key, (left.get(key) ?? 0n) - (own[i] ?? 0n));
  }
  return recoveries.map((r) => {
    const key = moveKey(r.depositAddress, r.token);
    const all = left.get(key) ?? 0n;
    left.set(key, 0n);
    return all > 0n ? all : 0n;
  });
}

/**
 * One stray recovery of a mined flush: Flushed, it is the operator's stray funds in the ledger (from
 * the incoming payments, as any money received) until returned; FlushFailed or reverted, it waits
 * for the next flush within the deposits' bound, then is left `failed`. Its gas share is the operator's.
 */
async function settleRecoveryOf(
  tx: Tx,
  flush: Flush,
  recovery: StrayRecovery,
  moved: { outcome: FlushOutcome | null; recovered: bigint; share: bigint; hash: string; ticker: string },
  now: string,
): Promise<void> {
  const { outcome } = moved;
  const key = moveKey(recovery.depositAddress, recovery.token);
  const failed = outcome === null || outcome.failed.some((e) => moveKey(e.forwarder, e.token) === key);
  if (moved.share > 0n) {
    const memo = `gas share of flush ${flush.id} (${flush.network}) for stray recovery ${recovery.id}`;
    const posting = { cause: "stray_recovery" as const, causeId: recovery.id, kind: `gas:${flush.id}`, memo };
    await postOperatorGas(tx, posting, moved.ticker, moved.share, now);
  }
  if (failed) {
    const attempts = recovery.attempts + 1;
    const reason =
      outcome === null ? `flush ${flush.id} reverted` : `FlushFailed in flush ${flush.id} (the token refused the move)`;
    const state = attempts >= FLUSH_DEPOSIT_MAX_ATTEMPTS ? "failed" : "waiting";
    const changes = { state, flush_id: state === "failed" ? flush.id : null, attempts, last_error: reason };
    await settleRecovery(tx, recovery.id, flush.id, changes, now);
    return;
  }
  const changes = { state: "recovered", amount: moved.recovered.toString(), tx_hash: moved.hash, last_error: null };
  if (!(await settleRecovery(tx, recovery.id, flush.id, changes, now))) return;
  if (moved.recovered === 0n) return;
  const posted = await postMovement(
    tx,
    movement({
      cause: "stray_recovery",
      causeId: recovery.id,
      kind: "recovered",
      memo: `stray ${recovery.strayTxId} recovered from ${recovery.depositAddress} by flush ${flush.id} (${moved.hash})`,
      postings: transfer(
        SYSTEM_ACCOUNTS.incomingPayments,
        strayFundsAccount(flush.network),
        recovery.currency,
        moved.recovered,
      ),
    }),
    now,
  );
  if (!posted.ok && posted.error !== "already_posted") assertOk(posted, "a stray recovery is posted");
}

function moveKey(forwarder: string, token: string | null): string {
  return `${forwarder.toLowerCase()}:${token?.toLowerCase() ?? "native"}`;
}

/**
 * Each deposit's own part of what its forwarder moved: one Flushed entry moves the forwarder's whole
 * balance of the token, which several deposits (or money nobody invoiced) may make up. A deposit
 * records at most what it deposited, the forwarder's move shared out in id order.
 */
export function ownAmounts(
  deposits: readonly Pick<FlushDeposit, "depositAddress" | "token" | "amountMinor">[],
  outcome: Pick<FlushOutcome, "moved"> | null,
): bigint[] {
  const left = new Map<string, bigint>();
  for (const e of outcome?.moved ?? []) {
    const key = moveKey(e.forwarder, e.token);
    left.set(key, (left.get(key) ?? 0n) + e.amount);
  }
  return deposits.map((d) => {
    const key = moveKey(d.depositAddress, d.token);
    const available = left.get(key) ?? 0n;
    const own = available < d.amountMinor ? available : d.amountMinor;
    left.set(key, available - own);
    return own;
  });
}

/** One deposit of a mined flush: Flushed (done, with its own amount) or FlushFailed (waits again, `failed` past its bound). */
async function settleOne(
  tx: Tx,
  flush: Flush,
  deposit: FlushDeposit,
  moved: { outcome: FlushOutcome | null; flushed: bigint; share: bigint },
  now: string,
): Promise<void> {
  const { outcome, flushed, share } = moved;
  const key = moveKey(deposit.depositAddress, deposit.token);
  const failed = outcome === null || outcome.failed.some((e) => moveKey(e.forwarder, e.token) === key);
  const gasShare = (deposit.gasShare + share).toString();
  if (!failed) {
    const changes = { state: "flushed", outcome: "Flushed", flushed_amount: flushed.toString(), gas_share: gasShare };
    await settleDeposit(tx, deposit.id, flush.id, { ...changes, last_error: null }, now);
    return;
  }
  const attempts = deposit.attempts + 1;
  const reason =
    outcome === null ? `flush ${flush.id} reverted` : `FlushFailed in flush ${flush.id} (the token refused the move)`;
  await settleDeposit(
    tx,
    deposit.id,
    flush.id,
    {
      state: attempts >= FLUSH_DEPOSIT_MAX_ATTEMPTS ? "failed" : "waiting",
      flush_id: attempts >= FLUSH_DEPOSIT_MAX_ATTEMPTS ? flush.id : null,
      next_attempt_at: depositRetryAt(attempts, Date.parse(now)),
      outcome: "FlushFailed",
      gas_share: gasShare,
      attempts,
      last_error: reason,
    },
    now,
  );
}

/** The gas is the operator's (the merchant was credited what the payer sent), as a sweep's is. */
async function postFlushGas(
  tx: Tx,
  of: { flush: Flush; nonce: number; ticker: string },
  deposit: FlushDeposit,
  share: bigint,
  now: string,
) {
  if (share === 0n) return;
  const { flush } = of;
  const posted = await postMovement(
    tx,
    movement({
      cause: "flush",
      causeId: flush.id,
      kind: `gas:${deposit.paymentId}`,
      memo: `gas share of flush ${flush.id} (${flush.network}, nonce ${of.nonce}) for payment ${deposit.paymentId}`,
      postings: transfer(SYSTEM_ACCOUNTS.operatorNetworkFees, SYSTEM_ACCOUNTS.chainGas, of.ticker, share),
    }),
    now,
  );
  if (!posted.ok && posted.error !== "already_posted") assertOk(posted, "flush gas is posted");
}

/** A flush that can never be mined (another transaction took its nonce): dropped, its deposits wait for another, no gas spent. */
async function releaseDeposits(tx: Tx, t: HotTransaction, now: string): Promise<void> {
  const reason = `nonce ${t.nonce} was used by another transaction: its deposits wait for another flush`;
  if (!(await moveFlush(tx, t.purposeId, { state: "dropped", last_error: reason }, now))) return;
  for (const r of await recoveriesOfFlush(tx, t.purposeId)) {
    const changes = { state: "waiting", flush_id: null, attempts: r.attempts + 1, last_error: reason };
    await settleRecovery(tx, r.id, t.purposeId, changes, now);
  }
  for (const deposit of await depositsOfFlush(tx, t.purposeId)) {
    const attempts = deposit.attempts + 1;
    const state = attempts >= FLUSH_DEPOSIT_MAX_ATTEMPTS ? "failed" : "waiting";
    await settleDeposit(
      tx,
      deposit.id,
      t.purposeId,
      {
        state,
        flush_id: state === "failed" ? t.purposeId : null,
        attempts,
        next_attempt_at: depositRetryAt(attempts, Date.parse(now)),
        last_error: reason,
      },
      now,
    );
  }
}
