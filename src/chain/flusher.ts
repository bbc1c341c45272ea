// Flushes (product §24): a network's confirmed forwarder deposits batched into one hot-wallet transaction, signed and stored before broadcast, followed until its block is deep, its gas split over the deposits in the ledger.
import { keccak256, parseTransaction } from "viem";
import type { ChainClient, ChainReceipt, Hex, Wallet } from "../domain/chain.ts";
import { isFiat } from "../domain/currencies.ts";
import { landedOf } from "../domain/finality.ts";
import {
  type Address,
  type Bytes32,
  type FlushItem,
  factoryAddress,
  MAX_FLUSH_BATCH,
  splitBatchFee,
} from "../domain/forwarders.ts";
import { bumpFees, isOverdue } from "../domain/hotTransaction.ts";
import { newRowId } from "../domain/ids.ts";
import { movement, SYSTEM_ACCOUNTS, transfer } from "../domain/ledger.ts";
import { assertOk } from "../domain/result.ts";
import { listCurrencies } from "../store/currencies.ts";
import {
  depositRetryAt,
  depositsOfFlush,
  FLUSH_DEPOSIT_MAX_ATTEMPTS,
  type Flush,
  type FlushDeposit,
  moveFlush,
  openFlushes,
  settleDeposit,
  storeFlush,
  waitingDeposits,
} from "../store/flushes.ts";
import { postMovement } from "../store/ledger.ts";
import { fenceScanLease, type Network, type ScanLease, takeHotNonce } from "../store/networks.ts";
import { capInWei, findPayoutSettings } from "../store/payoutTransactions.ts";
import type { Store, Tx } from "../store/store.ts";
import type { FlushCrashPoint } from "./crashPoints.ts";
import { type FlushOutcome, flushCalldata, flushOutcome, signFlush } from "./forwarders.ts";

/** Gas headroom over the node's estimate (a flush's cost can move between estimate and inclusion). */
const GAS_HEADROOM_PERCENT = 120n;
/** Bound on the transactions one flush may sign at its nonce (the first and its replacements), as for payouts and fundings. */
export const FLUSH_MAX_REPLACEMENTS = 8;
/** Longest pause between two looks at a flush not yet mined. */
const FLUSH_MAX_BACKOFF_MS = 60_000;
/** Open flushes followed per pass (one is open per network at a time; more only after a crash of an older version). */
const OPEN_FLUSHES_READ = 10;

export { FLUSH_CRASH_POINTS, type FlushCrashPoint } from "./crashPoints.ts";

/** What the flushes use of the service: the store, the HD wallet (null: nothing is flushed) and the batching bounds. */
export interface FlushPorts {
  readonly store: Store;
  readonly wallet: Wallet | null;
  /** FLUSH_BATCH_SIZE and FLUSH_MAX_WAIT_MS: a flush is signed once this many deposits wait, or the oldest waited this long. */
  readonly batch: { readonly size: number; readonly maxWaitMs: number };
  /** The one clock of the flushes: every time they write and every wait they set. */
  readonly now: () => Date;
}

/** A node call failed or a write raced another process: this pass does nothing more, the next one looks again. */
class FlushDeferred extends Error {}

type Write = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>;

/** What one pass writes through (fenced by the scanner lease), where a test may kill it, and the batching bounds. */
interface FlushRun {
  write: Write;
  crashAt: FlushCrashPoint | null;
  now: () => Date;
  network: Network;
  client: ChainClient;
  nativeTicker: string;
}

function crash(run: FlushRun, point: FlushCrashPoint): void {
  if (run.crashAt === point) process.kill(process.pid, "SIGKILL");
}

function must<T>(answer: { ok: true; value: T } | { ok: false; error: string; detail?: string }, what: string): T {
  if (!answer.ok) throw new FlushDeferred(`${answer.error}: ${what}${answer.detail ? ` (${answer.detail})` : ""}`);
  return answer.value;
}

/**
 * One flush step of a network, run by the holder of its scanner lease (`lease`: every write checks
 * its token; null only where no lease is held, as in tests). A signed flush is followed until deep
 * before another is signed, so the hot wallet has at most one flush nonce open per network.
 * Answers how many flushes or deposits moved on.
 */
export async function flushNetwork(
  ports: FlushPorts,
  network: Network,
  client: ChainClient,
  now: string,
  lease: ScanLease | null = null,
  crashAt: FlushCrashPoint | null = null,
): Promise<number> {
  if (ports.wallet === null) return 0;
  const write: Write = (work) =>
    ports.store.transaction(async (tx) => {
      if (lease !== null) await fenceScanLease(tx, network.name, lease, ports.now().toISOString());
      return work(tx);
    });
  const catalog = await listCurrencies(ports.store);
  const native = catalog.find((c) => c.network === network.name && !isFiat(c) && c.contractAddress === null);
  const run: FlushRun = { write, crashAt, now: ports.now, network, client, nativeTicker: native?.ticker ?? "ETH" };
  try {
    const open = await ports.store.transaction((tx) => openFlushes(tx, network.name, OPEN_FLUSHES_READ));
    if (open.length > 0) {
      let moved = 0;
      for (const flush of open) {
        if (flush.nextAttemptAt > now) continue;
        if (await followFlush(ports, run, flush)) moved++;
      }
      return moved;
    }
    return await startFlush(ports, run, now);
  } catch (error) {
    if (error instanceof FlushDeferred) return 0;
    throw error;
  }
}

/** One entry per forwarder and token: deposits sharing both are moved by one entry (the forwarder's whole balance). */
export function flushItemsOf(deposits: readonly Pick<FlushDeposit, "forwarderId" | "token">[]): FlushItem[] {
  const seen = new Map<string, FlushItem>();
  for (const d of deposits) {
    const key = `${d.forwarderId}:${d.token ?? "native"}`;
    if (!seen.has(key)) seen.set(key, { id: d.forwarderId as Bytes32, token: (d.token as Address | null) ?? null });
  }
  return [...seen.values()];
}

/**
 * Signs a flush of the waiting deposits when a batch is due (FLUSH_BATCH_SIZE of them, or the
 * oldest waited FLUSH_MAX_WAIT_MS): the nonce taken and the signed transaction stored, with its
 * deposits claimed, in one fenced database transaction, before it is broadcast.
 */
async function startFlush(ports: FlushPorts, run: FlushRun, now: string): Promise<number> {
  const wallet = ports.wallet;
  if (wallet === null) return 0;
  const hot = wallet.hotAddress;
  const factory = factoryAddress(hot);
  const waiting = await ports.store.transaction((tx) =>
    waitingDeposits(tx, run.network.name, factory, now, MAX_FLUSH_BATCH),
  );
  const oldest = waiting[0];
  if (oldest === undefined) return 0;
  const { size, maxWaitMs } = ports.batch;
  if (waiting.length < size && Date.parse(now) - Date.parse(oldest.createdAt) < maxWaitMs) return 0;
  const items = flushItemsOf(waiting);
  const data = must(flushCalldata(items), "flush batch");
  const estimate = must(await run.client.estimateGas({ from: hot, to: factory, data }), "flush gas estimate");
  const gas = (estimate * GAS_HEADROOM_PERCENT) / 100n;
  const fees = await feesFor(ports, run);
  const chainNonce = must(await run.client.nonce(hot, "pending"), "hot wallet nonce");
  const balance = must(await run.client.balance(hot), "hot wallet balance");
  // No gas is ever sent to a deposit address: the hot wallet pays it all, and waits for funds first.
  if (balance < gas * fees.maxFeePerGas) return 0;
  const signed = await run.write(async (tx) => {
    const nonce = await takeHotNonce(tx, run.network.name, hot, chainNonce);
    const flush = must(
      await signFlush({ signer: wallet.hot(), chainId: run.network.chainId, items, nonce, gas, ...fees }),
      "flush signing",
    );
    const at = run.now().toISOString();
    const base = { id: newRowId(), network: run.network.name, nonce, fromAddress: hot, factory };
    const stored = await storeFlush(
      tx,
      { ...base, signedRaw: flush.signed, txHash: keccak256(flush.signed), gasLimit: gas, ...fees, ...times(at) },
      waiting.map((d) => d.id),
      at,
    );
    // A deposit moved meanwhile (another process): the rollback frees the nonce just taken.
    if (!stored) throw new FlushDeferred("a deposit of the batch moved meanwhile");
    return flush.signed;
  });
  crash(run, "after_flush_sign");
  // A refused broadcast is no failure: the next pass broadcasts the same bytes again.
  await run.client.sendRawTransaction(signed);
  crash(run, "after_flush_broadcast");
  return waiting.length;
}

function times(at: string) {
  return { signedAt: at, resignedAt: at, nextAttemptAt: at };
}

/** The node's fees now, within the operator's cap (the network's payout settings). */
async function feesFor(ports: FlushPorts, run: FlushRun) {
  const quote = must(await run.client.fees(), "gas price");
  const settings = await findPayoutSettings(ports.store, run.network.name);
  const cap = capInWei(settings.maxFeePerGasGwei);
  const maxFeePerGas = (quote.maxFeePerGas ?? quote.gasPrice) > cap ? cap : (quote.maxFeePerGas ?? quote.gasPrice);
  const priority = quote.maxPriorityFeePerGas ?? quote.gasPrice;
  return { maxFeePerGas, maxPriorityFeePerGas: priority > maxFeePerGas ? maxFeePerGas : priority };
}

/**
 * A signed flush: settled once the transaction of its nonce that is mined (the current one or one
 * it replaced) is the network's confirmations deep; in a shallower block it waits as it is (a
 * reorganisation may take the block away: it is then broadcast again or replaced, and its deposits
 * are settled only when one is deep). Else, when its nonce went to another transaction, dropped
 * (its deposits wait again); else replaced at its nonce with a higher fee when overdue, or broadcast
 * again, the same bytes. Never abandoned while it can still be mined.
 */
async function followFlush(ports: FlushPorts, run: FlushRun, flush: Flush): Promise<boolean> {
  // The chain's nonce before the receipts: a flush mined between the two reads is not taken for dropped.
  const latest = must(await run.client.nonce(flush.fromAddress as Hex, "latest"), "hot wallet nonce");
  const candidates = [flush.signedRaw, ...[...flush.replaced].reverse()];
  const landed = must(
    await landedOf(run.client, candidates, (raw) => keccak256(raw as Hex), run.network.confirmations),
    "flush receipt",
  );
  if (landed !== null) {
    if (!landed.deep) return false;
    const mined = { raw: landed.tx, receipt: landed.receipt };
    return run.write((tx) => settleFlush(tx, run, flush, mined));
  }
  if (latest > flush.nonce) {
    const reason = `nonce ${flush.nonce} was used by another transaction: its deposits wait for another flush`;
    return run.write((tx) => releaseDeposits(tx, run, flush, { state: "dropped", last_error: reason }, reason));
  }
  if (await replaceOverdue(ports, run, flush)) return true;
  const sent = await run.client.sendRawTransaction(flush.signedRaw as Hex);
  const attempts = flush.attempts + 1;
  const wait = Math.min(1000 * 2 ** Math.min(attempts, 16), FLUSH_MAX_BACKOFF_MS);
  await run.write((tx) =>
    moveFlush(
      tx,
      flush.id,
      flush.txHash,
      {
        attempts,
        next_attempt_at: new Date(run.now().getTime() + wait).toISOString(),
        last_error: sent.ok ? "not mined yet: broadcast again" : `broadcast refused, sent again later: ${sent.error}`,
      },
      run.now().toISOString(),
    ),
  );
  return false;
}

/**
 * Replaces a flush not mined within the network's replacement delay: the same call at the same nonce
 * with fees 10% above (or the node's, if higher), within the operator's fee cap and
 * FLUSH_MAX_REPLACEMENTS. The replaced one is kept (it may still be the one mined). Stored
 * (compare-and-set on the transaction it replaces) before it is broadcast.
 */
async function replaceOverdue(ports: FlushPorts, run: FlushRun, flush: Flush): Promise<boolean> {
  const wallet = ports.wallet;
  if (wallet === null || flush.replaced.length + 1 >= FLUSH_MAX_REPLACEMENTS) return false;
  const settings = await findPayoutSettings(ports.store, run.network.name);
  if (!isOverdue(flush.resignedAt, run.now().toISOString(), settings.replaceAfterSeconds * 1000)) return false;
  const previous = parseTransaction(flush.signedRaw as Hex);
  if (previous.to == null || previous.data === undefined) return false;
  const quote = must(await run.client.fees(), "gas price");
  const bumped = bumpFees(
    { maxFeePerGas: flush.maxFeePerGas, maxPriorityFeePerGas: flush.maxPriorityFeePerGas },
    {
      maxFeePerGas: quote.maxFeePerGas ?? quote.gasPrice,
      maxPriorityFeePerGas: quote.maxPriorityFeePerGas ?? quote.gasPrice,
    },
    capInWei(settings.maxFeePerGasGwei),
  );
  if (!bumped.ok) return false; // at the fee cap: it keeps waiting as it is, broadcast again
  const raw = await wallet.hot().signTransaction({
    type: "eip1559",
    chainId: run.network.chainId,
    nonce: flush.nonce,
    to: previous.to,
    data: previous.data,
    value: 0n,
    gas: flush.gasLimit,
    ...bumped.value,
  });
  const at = run.now().toISOString();
  const stored = await run.write((tx) =>
    moveFlush(
      tx,
      flush.id,
      flush.txHash,
      {
        signed_raw: raw,
        tx_hash: keccak256(raw),
        replaced: JSON.stringify([...flush.replaced, flush.signedRaw]),
        max_fee_per_gas: bumped.value.maxFeePerGas.toString(),
        max_priority_fee_per_gas: bumped.value.maxPriorityFeePerGas.toString(),
        resigned_at: at,
        next_attempt_at: at,
        last_error: `not mined in time: replaced at nonce ${flush.nonce} with a higher fee`,
      },
      at,
    ),
  );
  if (!stored) return false;
  await run.client.sendRawTransaction(raw);
  return true;
}

/**
 * A mined flush: its gas (success or revert, the hot wallet paid it) split over its deposits and
 * posted to the operator's network fees, one movement per deposit naming the flush; each deposit
 * Flushed is done, FlushFailed (or in a reverted flush) waits for a later batch within its bound.
 * Compare-and-set on the flush: settled once, whichever process gets there first.
 */
async function settleFlush(
  tx: Tx,
  run: FlushRun,
  flush: Flush,
  mined: { raw: string; receipt: ChainReceipt },
): Promise<boolean> {
  const { receipt } = mined;
  const gas = receipt.gasUsed * receipt.effectiveGasPrice;
  const succeeded = receipt.status === "success";
  const now = run.now().toISOString();
  const done = await moveFlush(
    tx,
    flush.id,
    flush.txHash,
    {
      state: succeeded ? "completed" : "reverted",
      signed_raw: mined.raw,
      tx_hash: keccak256(mined.raw as Hex),
      gas_used: receipt.gasUsed.toString(),
      gas_cost: gas.toString(),
      last_error: succeeded ? null : "the flush transaction reverted: its deposits wait for another flush",
    },
    now,
  );
  if (!done) return false;
  const deposits = await depositsOfFlush(tx, flush.id);
  if (deposits.length === 0) return true;
  // Exact to the wei: equal shares, the remainder's wei one each to the first deposits by id.
  const shares = splitBatchFee(gas, deposits.length);
  const outcome = succeeded ? flushOutcome(flush.factory as Address, receipt.logs ?? []) : null;
  const own = ownAmounts(deposits, outcome);
  for (const [i, deposit] of deposits.entries()) {
    const share = shares[i] ?? 0n;
    await settleOne(tx, flush, deposit, { outcome, flushed: own[i] ?? 0n, share }, now);
    await postFlushGas(tx, run, flush, deposit, share, now);
  }
  return true;
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
async function postFlushGas(tx: Tx, run: FlushRun, flush: Flush, deposit: FlushDeposit, share: bigint, now: string) {
  if (share === 0n) return;
  const posted = await postMovement(
    tx,
    movement({
      cause: "flush",
      causeId: flush.id,
      kind: `gas:${deposit.paymentId}`,
      memo: `gas share of flush ${flush.id} (${run.network.name}, nonce ${flush.nonce}) for payment ${deposit.paymentId}`,
      postings: transfer(SYSTEM_ACCOUNTS.operatorNetworkFees, SYSTEM_ACCOUNTS.chainGas, run.nativeTicker, share),
    }),
    now,
  );
  if (!posted.ok && posted.error !== "already_posted") assertOk(posted, "flush gas is posted");
}

/** A flush that can never be mined (its nonce went to another transaction): its deposits wait for another, no gas spent. */
async function releaseDeposits(
  tx: Tx,
  run: FlushRun,
  flush: Flush,
  changes: { state: "dropped"; last_error: string },
  reason: string,
): Promise<boolean> {
  const now = run.now().toISOString();
  if (!(await moveFlush(tx, flush.id, flush.txHash, changes, now))) return false;
  for (const deposit of await depositsOfFlush(tx, flush.id)) {
    const attempts = deposit.attempts + 1;
    const state = attempts >= FLUSH_DEPOSIT_MAX_ATTEMPTS ? "failed" : "waiting";
    await settleDeposit(
      tx,
      deposit.id,
      flush.id,
      {
        state,
        flush_id: state === "failed" ? flush.id : null,
        attempts,
        next_attempt_at: depositRetryAt(attempts, run.now().getTime()),
        last_error: reason,
      },
      now,
    );
  }
  return true;
}
