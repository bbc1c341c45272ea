// Sweeps (product §12): confirmed deposits move to the hot wallet; a token's deposit address first gets its gas from the hot wallet, through the hot wallet's outbox (src/chain/sweepFunding.ts). The sweep's own transaction, signed by the deposit's key, is signed and stored before broadcast, so a retry sends the same transaction.
import { encodeFunctionData, erc20Abi, keccak256, parseTransaction } from "viem";
import type { HDAccount } from "viem/accounts";
import type { ChainClient, Hex, Wallet } from "../domain/chain.ts";
import type { Currency } from "../domain/currencies.ts";
import { landedOf } from "../domain/finality.ts";
import { movement, SYSTEM_ACCOUNTS, transfer } from "../domain/ledger.ts";
import { assertOk } from "../domain/result.ts";
import { postMovement } from "../store/ledger.ts";
import { fenceScanLease, type Network, type ScanLease } from "../store/networks.ts";
import type { Store, Tx } from "../store/store.ts";
import { dueSweeps, findSweep, moveSweep, SWEEP_MAX_ATTEMPTS, type Sweep, updateSweep } from "../store/sweeps.ts";
import type { SweepCrashPoint } from "./crashPoints.ts";
import { type HotChain, hotChainOf, OUTBOX_DEFAULTS, type OutboxLog, type OutboxOptions } from "./outbox.ts";
import { followHotTransactions } from "./outboxFollowing.ts";
import { freshPassReads, nativeCoinOf, type PassReads } from "./passReads.ts";
import { type FundingStatus, fundingHandler, fundingStatusOf, restartFunding, submitFunding } from "./sweepFunding.ts";

/** Sweeps handled per batch. */
export const SWEEP_BATCH = 20;
/** Gas of a plain ETH transfer. */
const NATIVE_TRANSFER_GAS = 21_000n;
/** Longest pause between two attempts of one sweep. */
const SWEEP_MAX_BACKOFF_MS = 300_000;

export function sweepRetryAt(attempts: number, nowMs: number): string {
  return new Date(nowMs + Math.min(1000 * 2 ** Math.min(attempts, 20), SWEEP_MAX_BACKOFF_MS)).toISOString();
}

class SweepDeferred extends Error {}

/** The hot wallet cannot pay the gas yet: the sweep waits for the operator, without using up its attempts. */
class SweepWaiting extends Error {}

/**
 * The signed sweep or gas funding is not mined yet (the sweep's was broadcast again, the same
 * bytes; the funding's is the outbox's to send again or replace). It is watched until it is,
 * however long that takes: failing it would leave a transaction that can still move the deposit
 * and spend gas unrecorded. Its checks back off to one per SWEEP_MAX_BACKOFF_MS.
 */
class SweepNotMined extends Error {}

/**
 * The sweep or gas funding is in a block not yet the network's confirmations deep: it waits as it
 * is, due again on the next pass (a reorganisation may take the block away; it is then broadcast
 * again). What it was for is settled only once it is deep.
 */
class SweepNotDeep extends Error {}

/** Why a sweep of a derived deposit address waits under a remote signer (docs/signer.md). */
export const NO_DEPOSIT_KEYS =
  "this derived deposit address needs WALLET_MNEMONIC to be swept: the process runs with a remote signer (SIGNER_URL); drain derived deposits with the mnemonic before switching";

/** How often a sweep waiting for the hot wallet's funds looks again. */
const SWEEP_WAIT_MS = 60_000;

/**
 * A database transaction of a sweep batch: with the scanner lease it runs under, it first checks
 * that lease's token (product §19), so a batch that outlived its lease writes nothing (ScanLeaseLost).
 */
type Write = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>;

export { SWEEP_CRASH_POINTS, type SweepCrashPoint } from "./crashPoints.ts";

/** What the sweeps use of the service: the store, the HD wallet whose keys sign (null: nothing is swept), their clock and log. */
export interface SweepPorts {
  readonly store: Store;
  readonly wallet: Wallet | null;
  /** The one clock of the sweeps: every time they write and every wait they set. */
  readonly now: () => Date;
  /** Where the outbox writes what it did with the sweeps' gas fundings. */
  readonly log: OutboxLog;
}

/** What one sweep batch writes through (fenced by its lease), where a test may kill it, and the hot wallet's outbox on its network. */
interface SweepRun {
  write: Write;
  /** The lease's check alone, inside a transaction the outbox opens (a funding's claim). */
  fence: (tx: Tx) => Promise<void>;
  crashAt: SweepCrashPoint | null;
  now: () => Date;
  chain: HotChain;
  outbox: OutboxOptions;
  /** The pass's catalog and head (passReads.ts): each sweep's entry is looked up in it, its depth counted by it. */
  reads: PassReads;
}

/** One sweep batch: its clock's moment, the lease it runs under (null only in tests), where a test kills it, and what its pass read. */
export interface SweepBatch {
  now: string;
  lease?: ScanLease | null;
  crashAt?: SweepCrashPoint | null;
  /** The worker's pass reads (passReads.ts); absent: the catalog is read once for this batch. */
  reads?: PassReads;
}

function crash(run: SweepRun, point: SweepCrashPoint): void {
  if (run.crashAt === point) process.kill(process.pid, "SIGKILL");
}

function must<T>(answer: { ok: true; value: T } | { ok: false; error: string; detail?: string }, what: string): T {
  if (!answer.ok) throw new SweepDeferred(`${answer.error}: ${what}${answer.detail ? ` (${answer.detail})` : ""}`);
  return answer.value;
}

/**
 * One batch of sweeps of a network, run by the holder of its scanner lease (`lease`: every write
 * checks its token; null only where no lease is held, as in tests): the outbox first follows the
 * gas fundings in flight (settling what is deep), then the due sweeps step on. Answers how many
 * moved on.
 */
export async function sweepNetwork(
  ports: SweepPorts,
  network: Network,
  client: ChainClient,
  { now, lease = null, crashAt = null, reads: passed }: SweepBatch,
) {
  const wallet = ports.wallet;
  if (wallet === null) return 0;
  const fence = async (tx: Tx) => {
    if (lease !== null) await fenceScanLease(tx, network.name, lease, ports.now().toISOString());
  };
  const write: Write = (work) =>
    ports.store.transaction(async (tx) => {
      await fence(tx);
      return work(tx);
    });
  const reads = passed ?? (await freshPassReads(ports.store));
  const native = nativeCoinOf(reads.catalog, network.name);
  const chain = await hotChainOf(ports.store, wallet.hot(network.name), network, client, native?.ticker ?? null);
  const outbox: OutboxOptions = { ...OUTBOX_DEFAULTS, now: ports.now, log: ports.log, head: reads.head };
  const run: SweepRun = { write, fence, crashAt, now: ports.now, chain, outbox, reads };
  let moved = await followFundings(ports, run);
  const due = await ports.store.transaction((tx) => dueSweeps(tx, network.name, now, SWEEP_BATCH));
  const busy = new Set<string>();
  for (const sweep of due) {
    // One transaction at a time per deposit address: its nonces are taken from the node.
    if (busy.has(sweep.depositAddress)) continue;
    busy.add(sweep.depositAddress);
    try {
      if (await step(ports, run, network, client, sweep, native?.ticker ?? "ETH")) moved++;
    } catch (error) {
      await deferStep(run, sweep, error);
    }
  }
  return moved;
}

/** The outbox follows the network's gas fundings in flight; a failure is logged and holds no sweep back (the next pass follows again). */
async function followFundings(ports: SweepPorts, run: SweepRun): Promise<number> {
  const handlers = { funding: fundingHandler(run.chain.nativeCurrency) };
  try {
    return await followHotTransactions(ports.store, run.chain, handlers, run.outbox);
  } catch (error) {
    ports.log.warn({ err: error, network: run.chain.network }, "gas fundings not followed: followed again later");
    return 0;
  }
}

/** A step that did not finish: the sweep waits, is watched, or is retried later (failed past its bound unless it has a transaction out); other errors propagate. */
async function deferStep({ write, now }: SweepRun, sweep: Sweep, error: unknown): Promise<void> {
  if (error instanceof SweepWaiting) {
    await write((tx) =>
      updateSweep(
        tx,
        sweep.id,
        { last_error: error.message, next_attempt_at: new Date(now().getTime() + SWEEP_WAIT_MS).toISOString() },
        now().toISOString(),
      ),
    );
    return;
  }
  if (error instanceof SweepNonceUsed || error instanceof SweepNotDeep) return;
  if (error instanceof SweepNotMined) {
    await write(async (tx) => {
      const current = await findSweep(tx, sweep.id);
      if (!current) return;
      // Attempts pace the checks here; they stop short of the bound that fails a sweep.
      const attempts = Math.min(current.attempts + 1, SWEEP_MAX_ATTEMPTS - 1);
      await updateSweep(
        tx,
        sweep.id,
        { attempts, last_error: error.message, next_attempt_at: sweepRetryAt(attempts, now().getTime()) },
        now().toISOString(),
      );
    });
    return;
  }
  if (!(error instanceof SweepDeferred)) throw error;
  await write(async (tx) => {
    const current = await findSweep(tx, sweep.id);
    if (!current || current.state !== sweep.state) return;
    const attempts = current.attempts + 1;
    // A signed funding or sweep may still be mined (a node that fails for a while proves
    // nothing): such a sweep is followed, like a payout, and never failed (product §19).
    const signedOut = await holdsSignedTransaction(tx, current);
    const fail = attempts >= SWEEP_MAX_ATTEMPTS && !signedOut;
    const paced = signedOut ? Math.min(attempts, SWEEP_MAX_ATTEMPTS - 1) : attempts;
    await moveSweep(
      tx,
      sweep.id,
      current.state,
      fail
        ? { state: "failed", attempts, last_error: error.message }
        : { attempts: paced, last_error: error.message, next_attempt_at: sweepRetryAt(paced, now().getTime()) },
      now().toISOString(),
    );
  });
}

/** Whether the sweep has a signed transaction out that may still be mined: its own, or its funding in the outbox. */
async function holdsSignedTransaction(tx: Tx, sweep: Sweep): Promise<boolean> {
  if (sweep.state === "sweeping") return sweep.sweepSigned !== null;
  if (sweep.state !== "funding") return false;
  const funding = await fundingStatusOf(tx, sweep.id);
  return funding.state === "open" || funding.state === "mined";
}

async function gasPrice(client: ChainClient): Promise<bigint> {
  return must(await client.fees(), "gas price").gasPrice;
}

/** Moves one sweep a step on; answers whether it changed. Node failures throw SweepDeferred (retried later). */
async function step(
  ports: SweepPorts,
  run: SweepRun,
  network: Network,
  client: ChainClient,
  current: Sweep,
  nativeTicker: string,
): Promise<boolean> {
  const wallet = ports.wallet;
  if (wallet === null) return false;
  const currency = run.reads.catalog.find((c) => c.ticker === current.currency);
  if (!currency) throw new SweepDeferred(`currency ${current.currency} left the catalog`);
  // A transaction already signed is only ever broadcast again and watched: never replaced by another.
  if (current.state === "sweeping" && current.sweepSigned !== null && current.sweepTx !== null) {
    return followSweep(ports, run, network, client, current, nativeTicker);
  }
  // A remote signer leaves no phrase in the process: a derived address cannot be swept here.
  if (wallet.deposits === null) throw new SweepWaiting(NO_DEPOSIT_KEYS);
  const deposit = wallet.deposits.key(current.depositIndex);
  if (current.state === "funding") {
    const funding = await ports.store.transaction((tx) => fundingStatusOf(tx, current.id));
    if (funding.state !== "confirmed") return awaitFunding(run, current, funding);
    // Funded, and deep: go on to sign the token transfer.
  }
  return signSweep(ports, run, network, client, current, currency, deposit, wallet.hotAddress);
}

/**
 * A sweep whose funding is not final yet waits for the outbox to send, replace and settle it;
 * one whose funding reverted is retried (and failed past its bound: nothing is out); one left
 * `funding` with nothing that can be mined is funded again.
 */
async function awaitFunding(run: SweepRun, sweep: Sweep, funding: FundingStatus): Promise<boolean> {
  if (funding.state === "open") {
    const refused = funding.current?.lastError;
    throw new SweepNotMined(
      refused
        ? `the gas funding is not mined yet: broadcast refused, sent again later: ${refused}`
        : "the gas funding transaction is not mined yet: broadcast again and watched",
    );
  }
  if (funding.state === "mined") throw new SweepNotDeep("the gas funding is mined, not yet deep enough");
  if (funding.state === "reverted") throw new SweepDeferred("the gas funding transaction reverted");
  return run.write((tx) => restartFunding(tx, sweep, run.now().toISOString()));
}

/**
 * A signed sweep transaction: broadcast again until mined; mined and the network's confirmations
 * deep, the sweep completes (its gas and its funding's ledgered) or, reverted, starts again.
 */
async function followSweep(
  ports: SweepPorts,
  run: SweepRun,
  network: Network,
  client: ChainClient,
  sweep: Sweep,
  nativeTicker: string,
): Promise<boolean> {
  const landed = must(
    await landedOf(client, [sweep.sweepTx as Hex], (hash) => hash, network.confirmations, run.reads.head ?? undefined),
    "sweep receipt",
  );
  if (landed === null) {
    await broadcastAgain(run, client, sweep, sweep.depositAddress as Hex, sweep.sweepSigned as Hex);
    throw new SweepNotMined("the sweep transaction is not mined yet: broadcast again and watched");
  }
  if (!landed.deep) throw new SweepNotDeep("the sweep transaction is mined, not yet deep enough");
  const receipt = landed.receipt;
  const gas = receipt.gasUsed * receipt.effectiveGasPrice + (await fundingGas(ports.store, client, sweep));
  await run.write(async (tx) => {
    const now = run.now().toISOString();
    if (receipt.status !== "success") {
      // Reverted: sign again from the start (a new nonce), within the attempt bound.
      const attempts = sweep.attempts + 1;
      await moveSweep(
        tx,
        sweep.id,
        "sweeping",
        attempts >= SWEEP_MAX_ATTEMPTS
          ? { state: "failed", attempts, last_error: "the sweep transaction reverted" }
          : {
              state: "pending",
              sweep_tx: null,
              sweep_signed: null,
              attempts,
              last_error: "the sweep transaction reverted",
              next_attempt_at: sweepRetryAt(attempts, run.now().getTime()),
            },
        now,
      );
      return;
    }
    // Compare-and-set: another process (or a batch that outlived its lease) settled it first: nothing twice.
    const done = await moveSweep(
      tx,
      sweep.id,
      "sweeping",
      { state: "completed", gas_cost: gas.toString(), last_error: null },
      now,
    );
    if (done) await postSweepGas(tx, network, sweep, gas, nativeTicker, now);
  });
  return true;
}

/**
 * The gas of the sweep's funding that made it (its newest confirmed one; none for a native coin's
 * sweep): the receipt the outbox recorded on it when it settled, or, for one moved in by migration
 * 042 (confirmed, no receipt recorded), the node's receipt of it.
 */
async function fundingGas(store: Store, client: ChainClient, sweep: Sweep): Promise<bigint> {
  const funding = await store.transaction((tx) => fundingStatusOf(tx, sweep.id));
  const row = funding.state === "confirmed" ? funding.current : null;
  if (row === null) return 0n;
  if (row.gasUsed !== null && row.effectiveGasPrice !== null) return row.gasUsed * row.effectiveGasPrice;
  const receipt = must(await client.receipt(row.hash as Hex), "funding receipt");
  return receipt === null ? 0n : receipt.gasUsed * receipt.effectiveGasPrice;
}

/** The gas is the operator's: the merchant was credited what the payer sent. */
async function postSweepGas(tx: Tx, network: Network, sweep: Sweep, gas: bigint, nativeTicker: string, now: string) {
  if (gas === 0n) return;
  const posted = await postMovement(
    tx,
    movement({
      cause: "sweep",
      causeId: sweep.id,
      kind: "gas",
      memo: `gas of sweep ${sweep.id} (${network.name})`,
      postings: transfer(SYSTEM_ACCOUNTS.operatorNetworkFees, SYSTEM_ACCOUNTS.chainGas, nativeTicker, gas),
    }),
    now,
  );
  if (!posted.ok && posted.error !== "already_posted") assertOk(posted, "sweep gas is posted");
}

/**
 * Signs the deposit's transfer to the hot wallet, stores it (compare-and-set from the state this
 * step read) and broadcasts it; a token deposit without gas is funded first.
 */
async function signSweep(
  ports: SweepPorts,
  run: SweepRun,
  network: Network,
  client: ChainClient,
  sweep: Sweep,
  currency: Currency,
  deposit: HDAccount,
  hot: Hex,
): Promise<boolean> {
  const price = await gasPrice(client);
  const nonce = must(await client.nonce(deposit.address, "pending"), "deposit nonce");
  const planned = await sweepRequest(ports, run, client, sweep, currency, deposit.address, hot, price);
  if (typeof planned === "boolean") return planned;
  const { request, swept } = planned;
  const signed = await deposit.signTransaction({
    type: "legacy",
    chainId: network.chainId,
    nonce,
    gasPrice: price,
    ...request,
  });
  const hash = keccak256(signed);
  const stored = await run.write((tx) =>
    moveSweep(
      tx,
      sweep.id,
      sweep.state,
      { state: "sweeping", sweep_signed: signed, sweep_tx: hash, swept_amount: swept.toString(), last_error: null },
      run.now().toISOString(),
    ),
  );
  if (!stored) return false;
  crash(run, "after_sweep_sign");
  must(await client.sendRawTransaction(signed), "sweep broadcast");
  crash(run, "after_sweep_broadcast");
  return true;
}

/** The sweep's transaction and the amount it moves; or, when this step funded or failed the sweep instead, whether it changed. */
async function sweepRequest(
  ports: SweepPorts,
  run: SweepRun,
  client: ChainClient,
  sweep: Sweep,
  currency: Currency,
  depositAddress: Hex,
  hot: Hex,
  price: bigint,
): Promise<{ request: { to: Hex; value: bigint; data?: Hex; gas: bigint }; swept: bigint } | boolean> {
  if (currency.contractAddress === null) {
    // The payer's coins pay their own sweep's gas; the operator bears it in the ledger.
    const value = sweep.amountMinor - NATIVE_TRANSFER_GAS * price;
    if (value <= 0n) {
      return run.write((tx) =>
        moveSweep(
          tx,
          sweep.id,
          sweep.state,
          { state: "failed", last_error: "the deposit does not cover the sweep's gas" },
          run.now().toISOString(),
        ),
      );
    }
    return { request: { to: hot, value, gas: NATIVE_TRANSFER_GAS }, swept: value };
  }
  const data = encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [hot, sweep.amountMinor] });
  const estimate = must(
    await client.estimateGas({ from: depositAddress, to: currency.contractAddress as Hex, data }),
    "gas estimate",
  );
  const gas = (estimate * 12n) / 10n;
  const needed = gas * price;
  const balance = must(await client.balance(depositAddress), "deposit balance");
  if (balance < needed && sweep.state !== "funding") return fund(ports, run, sweep, needed - balance);
  if (balance < needed) throw new SweepDeferred("the deposit address still lacks gas");
  return { request: { to: currency.contractAddress as Hex, value: 0n, data, gas }, swept: sweep.amountMinor };
}

/** The signed sweep lost its nonce to another transaction (it can never be mined), or the sweep moved meanwhile. */
class SweepNonceUsed extends Error {}

/**
 * Broadcasts a signed sweep again, the same bytes. A refused broadcast (a node that refuses for a
 * while, a full pool) is not a failure: the transaction can still be mined, so it is watched and
 * sent again (SweepNotMined). Only when the deposit's nonce moved past it without it (another
 * transaction took the nonce) can it never be mined: the sweep then starts again from `pending`,
 * by compare-and-set from `sweeping`.
 */
async function broadcastAgain(
  { write, now }: SweepRun,
  client: ChainClient,
  sweep: Sweep,
  sender: Hex,
  signed: Hex,
): Promise<void> {
  const sent = await client.sendRawTransaction(signed);
  if (sent.ok) return;
  const mined = await client.nonce(sender, "latest");
  const nonce = parseTransaction(signed).nonce;
  if (!mined.ok || nonce === undefined || mined.value <= nonce) {
    throw new SweepNotMined(
      `broadcast refused, sent again later: ${sent.error}${sent.detail ? ` (${sent.detail})` : ""}`,
    );
  }
  // The nonce is used on chain and this transaction has no receipt: whichever took it, this never will.
  const restarted = await write((tx) =>
    moveSweep(
      tx,
      sweep.id,
      "sweeping",
      {
        state: "pending",
        sweep_tx: null,
        sweep_signed: null,
        last_error: `nonce ${nonce} was used by another transaction: signed again`,
        next_attempt_at: now().toISOString(),
      },
      now().toISOString(),
    ),
  );
  throw new SweepNonceUsed(restarted ? "signed again" : "moved meanwhile");
}

/**
 * The hot wallet sends a token's deposit address the gas its sweep needs, through its outbox
 * (the claim checks the lease and moves the sweep pending -> funding). Answers whether it moved;
 * a wallet that cannot cover it (beside what it promised and what queued payouts hold back) waits.
 */
async function fund(ports: SweepPorts, run: SweepRun, sweep: Sweep, amount: bigint): Promise<boolean> {
  const wallet = ports.wallet;
  if (wallet === null) return false;
  if (wallet.deposits === null) throw new SweepWaiting(NO_DEPOSIT_KEYS);
  const to = wallet.deposits.address(sweep.depositIndex);
  // A test's crash points of a funding are the outbox's: stored and not broadcast, broadcast and not recorded.
  const crashAt =
    run.crashAt === "after_funding_sign"
      ? "after_sign"
      : run.crashAt === "after_funding_broadcast"
        ? "after_broadcast"
        : null;
  const submitted = await submitFunding(
    ports.store,
    run.chain,
    { sweep, to, amount, fence: run.fence },
    { ...run.outbox, crashAt },
  );
  if (submitted === "node_unavailable") throw new SweepDeferred("node_unavailable: hot wallet balance, nonce or fees");
  if (submitted === "uncovered") {
    throw new SweepWaiting("the hot wallet cannot pay the gas of this sweep (fund it with the network's coin)");
  }
  return submitted === "stored";
}
