// Sweeps (product §12): confirmed deposits move to the hot wallet; a token's deposit address first gets its gas from the hot wallet. Signed and stored before broadcast, so a retry sends the same transaction.
import { encodeFunctionData, erc20Abi, keccak256, parseTransaction } from "viem";
import type { HDAccount } from "viem/accounts";
import type { ChainClient, ChainReceipt, Hex, Wallet } from "../domain/chain.ts";
import { type Currency, isFiat } from "../domain/currencies.ts";
import { landedOf } from "../domain/finality.ts";
import { bumpFees, isOverdue } from "../domain/hotTransaction.ts";
import { movement, SYSTEM_ACCOUNTS, transfer } from "../domain/ledger.ts";
import { assertOk } from "../domain/result.ts";
import { listCurrencies } from "../store/currencies.ts";
import { postMovement } from "../store/ledger.ts";
import { fenceScanLease, type Network, type ScanLease, takeHotNonce } from "../store/networks.ts";
import { capInWei, findPayoutSettings } from "../store/payoutTransactions.ts";
import type { Store, Tx } from "../store/store.ts";
import {
  dueSweeps,
  findSweep,
  moveSweep,
  replaceFunding,
  SWEEP_MAX_ATTEMPTS,
  type Sweep,
  updateSweep,
} from "../store/sweeps.ts";
import type { SweepCrashPoint } from "./crashPoints.ts";

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
 * The signed sweep or gas funding is not mined yet (it was broadcast again, the same bytes). It is
 * watched until it is, however long that takes: failing it would leave a transaction that can still
 * move the deposit and spend gas unrecorded (and, for a funding, a hot-wallet nonce in use). Its
 * checks back off to one per SWEEP_MAX_BACKOFF_MS.
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
/** Bound on the fundings one sweep may sign at its nonce (the first and its replacements), as for payouts. */
export const FUNDING_MAX_REPLACEMENTS = 8;

/**
 * A database transaction of a sweep batch: with the scanner lease it runs under, it first checks
 * that lease's token (product §19), so a batch that outlived its lease writes nothing (ScanLeaseLost).
 */
type Write = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>;

export { SWEEP_CRASH_POINTS, type SweepCrashPoint } from "./crashPoints.ts";

/** What the sweeps use of the service: the store, and the HD wallet whose keys sign (null: nothing is swept). */
export interface SweepPorts {
  readonly store: Store;
  readonly wallet: Wallet | null;
  /** The one clock of the sweeps: every time they write and every wait they set. */
  readonly now: () => Date;
}

/** What one sweep batch writes through (fenced by its lease) and where a test may kill it. */
interface SweepRun {
  write: Write;
  crashAt: SweepCrashPoint | null;
  now: () => Date;
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
 * checks its token; null only where no lease is held, as in tests). Answers how many moved on.
 */
export async function sweepNetwork(
  ports: SweepPorts,
  network: Network,
  client: ChainClient,
  now: string,
  lease: ScanLease | null = null,
  crashAt: SweepCrashPoint | null = null,
) {
  const wallet = ports.wallet;
  if (wallet === null) return 0;
  const write: Write = (work) =>
    ports.store.transaction(async (tx) => {
      if (lease !== null) await fenceScanLease(tx, network.name, lease, ports.now().toISOString());
      return work(tx);
    });
  const run: SweepRun = { write, crashAt, now: ports.now };
  const catalog = await listCurrencies(ports.store);
  const native = catalog.find((c) => c.network === network.name && !isFiat(c) && c.contractAddress === null);
  const due = await ports.store.transaction((tx) => dueSweeps(tx, network.name, now, SWEEP_BATCH));
  let moved = 0;
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
    const signedOut = holdsSignedTransaction(current);
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

/** Whether the sweep has a signed transaction out that may still be mined. */
function holdsSignedTransaction(sweep: Sweep): boolean {
  return (
    (sweep.state === "funding" && sweep.fundingSigned !== null) ||
    (sweep.state === "sweeping" && sweep.sweepSigned !== null)
  );
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
  const catalog = await listCurrencies(ports.store);
  const currency = catalog.find((c) => c.ticker === current.currency);
  if (!currency) throw new SweepDeferred(`currency ${current.currency} left the catalog`);
  // A transaction already signed is only ever broadcast again and watched: never replaced by another.
  if (current.state === "sweeping" && current.sweepSigned !== null && current.sweepTx !== null) {
    return followSweep(run, network, client, current, current.depositAddress as Hex, nativeTicker);
  }
  // A remote signer leaves no phrase in the process: a derived address cannot be swept here.
  if (wallet.deposits === null) throw new SweepWaiting(NO_DEPOSIT_KEYS);
  const deposit = wallet.deposits.key(current.depositIndex);
  let sweep = current;
  if (sweep.state === "funding" && sweep.fundingSigned !== null && sweep.fundingTx !== null) {
    const funded = await followFunding(ports, run, network, client, sweep, wallet.hotAddress);
    if (typeof funded === "boolean") return funded;
    sweep = funded; // Funded: go on to sign the token transfer.
  }
  return signSweep(ports, run, network, client, sweep, currency, deposit, wallet.hotAddress);
}

/**
 * A signed sweep transaction: broadcast again until mined; mined and the network's confirmations
 * deep, the sweep completes (gas ledgered) or, reverted, starts again.
 */
async function followSweep(
  run: SweepRun,
  network: Network,
  client: ChainClient,
  sweep: Sweep,
  depositAddress: Hex,
  nativeTicker: string,
): Promise<boolean> {
  const landed = must(
    await landedOf(client, [sweep.sweepTx as Hex], (hash) => hash, network.confirmations),
    "sweep receipt",
  );
  if (landed === null) {
    await broadcastAgain(run, client, sweep, "sweeping", depositAddress, sweep.sweepSigned as Hex);
    throw new SweepNotMined("the sweep transaction is not mined yet: broadcast again and watched");
  }
  if (!landed.deep) throw new SweepNotDeep("the sweep transaction is mined, not yet deep enough");
  const receipt = landed.receipt;
  let gas = receipt.gasUsed * receipt.effectiveGasPrice;
  if (sweep.fundingTx !== null) {
    const funding = must(await client.receipt(sweep.fundingTx as Hex), "funding receipt");
    if (funding !== null) gas += funding.gasUsed * funding.effectiveGasPrice;
  }
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
 * A signed gas funding: replaced when overdue, else broadcast again until mined. Answers the sweep
 * once its funding is mined and deep (with the funding that was mined, maybe an earlier one at the
 * nonce), or whether this step changed it.
 */
async function followFunding(
  ports: SweepPorts,
  run: SweepRun,
  network: Network,
  client: ChainClient,
  sweep: Sweep,
  hot: Hex,
): Promise<Sweep | boolean> {
  const mined = await minedFunding(client, network, sweep);
  if (mined === null) {
    // Not mined in time: replaced at its nonce with a higher fee, like a payout (product §19).
    if (await replaceOverdueFunding(ports, run, network, client, sweep)) return true;
    await broadcastAgain(run, client, sweep, "funding", hot, sweep.fundingSigned as Hex);
    throw new SweepNotMined("the gas funding transaction is not mined yet: broadcast again and watched");
  }
  if (mined.receipt.status !== "success") throw new SweepDeferred("the gas funding transaction reverted");
  if (mined.raw === sweep.fundingSigned) return sweep;
  // An earlier funding at the nonce was mined, not its replacement: that one's gas is the cost.
  const raw = mined.raw as Hex;
  const noted = await run.write((tx) =>
    replaceFunding(
      tx,
      sweep.id,
      sweep.fundingTx as string,
      { funding_signed: raw, funding_tx: keccak256(raw) },
      run.now().toISOString(),
    ),
  );
  if (!noted) return false;
  return { ...sweep, fundingSigned: raw, fundingTx: keccak256(raw) };
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
  const planned = await sweepRequest(ports, run, network, client, sweep, currency, deposit.address, hot, price);
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
  network: Network,
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
  if (balance < needed && sweep.state !== "funding") {
    await fund(ports, run, network, client, sweep, needed - balance, price);
    return true;
  }
  if (balance < needed) throw new SweepDeferred("the deposit address still lacks gas");
  return { request: { to: currency.contractAddress as Hex, value: 0n, data, gas }, swept: sweep.amountMinor };
}

/** The signed sweep or funding lost its nonce to another transaction (it can never be mined), or the sweep moved meanwhile. */
class SweepNonceUsed extends Error {}

/**
 * Broadcasts a signed sweep or funding again, the same bytes. A refused broadcast (a node that
 * refuses for a while, a full pool) is not a failure: the transaction can still be mined, so it
 * is watched and sent again (SweepNotMined). Only when its sender's nonce moved past it without
 * it (another transaction took the nonce) can it never be mined: the sweep then starts again from
 * `pending`, by compare-and-set from the state it was seen in.
 */
async function broadcastAgain(
  { write, now }: SweepRun,
  client: ChainClient,
  sweep: Sweep,
  state: "funding" | "sweeping",
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
      state,
      {
        state: "pending",
        ...(state === "funding"
          ? {
              funding_tx: null,
              funding_signed: null,
              funding_amount: null,
              funding_nonce: null,
              funding_signed_at: null,
              funding_resigned_at: null,
              funding_replaced: null,
            }
          : { sweep_tx: null, sweep_signed: null }),
        last_error: `nonce ${nonce} was used by another transaction: signed again`,
        next_attempt_at: now().toISOString(),
      },
      now().toISOString(),
    ),
  );
  throw new SweepNonceUsed(restarted ? "signed again" : "moved meanwhile");
}

/** The hot wallet sends a token's deposit address the gas its sweep needs (a nonce from the database). */
async function fund(
  ports: SweepPorts,
  { write, crashAt, now }: SweepRun,
  network: Network,
  client: ChainClient,
  sweep: Sweep,
  amount: bigint,
  price: bigint,
): Promise<void> {
  const wallet = ports.wallet;
  if (wallet === null) return;
  if (wallet.deposits === null) throw new SweepWaiting(NO_DEPOSIT_KEYS);
  const to = wallet.deposits.address(sweep.depositIndex);
  const chainNonce = must(await client.nonce(wallet.hotAddress, "pending"), "hot wallet nonce");
  const hotBalance = must(await client.balance(wallet.hotAddress), "hot wallet balance");
  if (hotBalance < amount + NATIVE_TRANSFER_GAS * price) {
    throw new SweepWaiting("the hot wallet cannot pay the gas of this sweep (fund it with the network's coin)");
  }
  const signed = await write(async (tx) => {
    const nonce = await takeHotNonce(tx, network.name, wallet.hotAddress, chainNonce);
    const serialized = await wallet.hot().signTransaction({
      type: "legacy",
      chainId: network.chainId,
      nonce,
      gasPrice: price,
      gas: NATIVE_TRANSFER_GAS,
      to,
      value: amount,
    });
    const moved = await moveSweep(
      tx,
      sweep.id,
      "pending",
      {
        state: "funding",
        funding_signed: serialized,
        funding_tx: keccak256(serialized),
        funding_amount: amount.toString(),
        funding_nonce: nonce,
        funding_signed_at: now().toISOString(),
        funding_resigned_at: now().toISOString(),
        funding_replaced: null,
        last_error: null,
      },
      now().toISOString(),
    );
    // Moved meanwhile (another process funds it): the rollback frees the nonce just taken.
    if (!moved) throw new SweepNonceUsed("the sweep moved meanwhile: its funding was not stored");
    return serialized;
  });
  crash({ write, crashAt, now }, "after_funding_sign");
  must(await client.sendRawTransaction(signed), "funding broadcast");
  crash({ write, crashAt, now }, "after_funding_broadcast");
}

/**
 * The funding of the sweep's nonce that is mined, if any: the current one or one it replaced
 * (whichever the network took). The sweep is signed only once its funding is the network's
 * confirmations deep (SweepNotDeep before). Node failures throw SweepDeferred.
 */
async function minedFunding(
  client: ChainClient,
  network: Network,
  sweep: Sweep,
): Promise<{ raw: string; receipt: ChainReceipt } | null> {
  const candidates = [sweep.fundingSigned as string, ...[...sweep.fundingReplaced].reverse()];
  const landed = must(
    await landedOf(client, candidates, (raw) => keccak256(raw as Hex), network.confirmations),
    "funding receipt",
  );
  if (landed === null) return null;
  if (!landed.deep) throw new SweepNotDeep("the gas funding is mined, not yet deep enough");
  return { raw: landed.tx, receipt: landed.receipt };
}

/**
 * Replaces a gas funding not mined within the network's replacement delay (as payouts are): the
 * same transfer at the same nonce with a gas price 10% above it (or the node's, if higher), within
 * the operator's fee cap and FUNDING_MAX_REPLACEMENTS. The replaced one is kept (it may still be
 * the one mined). Stored (compare-and-set on the funding it replaces) before it is broadcast.
 * Answers whether it replaced it.
 */
async function replaceOverdueFunding(
  ports: SweepPorts,
  { write, now }: SweepRun,
  network: Network,
  client: ChainClient,
  sweep: Sweep,
): Promise<boolean> {
  const wallet = ports.wallet;
  const previousRaw = sweep.fundingSigned;
  const signedAt = sweep.fundingResignedAt ?? sweep.fundingSignedAt;
  if (wallet === null || previousRaw === null || sweep.fundingTx === null || signedAt === null) return false;
  if (sweep.fundingReplaced.length + 1 >= FUNDING_MAX_REPLACEMENTS) return false;
  const settings = await findPayoutSettings(ports.store, network.name);
  if (!isOverdue(signedAt, now().toISOString(), settings.replaceAfterSeconds * 1000)) return false;
  const previous = parseTransaction(previousRaw as Hex);
  if (previous.nonce === undefined || previous.gasPrice === undefined || previous.to == null) return false;
  const suggested = await gasPrice(client);
  const bumped = bumpFees(
    { maxFeePerGas: previous.gasPrice, maxPriorityFeePerGas: previous.gasPrice },
    { maxFeePerGas: suggested, maxPriorityFeePerGas: suggested },
    capInWei(settings.maxFeePerGasGwei),
  );
  if (!bumped.ok) return false; // at the fee cap: it keeps waiting as it is, broadcast again
  const raw = await wallet.hot().signTransaction({
    type: "legacy",
    chainId: network.chainId,
    nonce: previous.nonce,
    gasPrice: bumped.value.maxFeePerGas,
    gas: previous.gas ?? NATIVE_TRANSFER_GAS,
    to: previous.to,
    value: previous.value ?? 0n,
  });
  const at = now().toISOString();
  const stored = await write((tx) =>
    replaceFunding(
      tx,
      sweep.id,
      sweep.fundingTx as string,
      {
        funding_signed: raw,
        funding_tx: keccak256(raw),
        funding_resigned_at: at,
        funding_signed_at: sweep.fundingSignedAt ?? at,
        funding_replaced: JSON.stringify([...sweep.fundingReplaced, previousRaw]),
        last_error: `the gas funding was not mined in time: replaced at nonce ${previous.nonce} with a higher fee`,
      },
      at,
    ),
  );
  if (!stored) return false;
  // A refused broadcast is sent again on the next look, like the first funding's.
  await client.sendRawTransaction(raw);
  return true;
}
