// Flushes (product §24): a network's confirmed forwarder deposits batched into one hot-wallet transaction; this is their planner (what is due, its gas, its claim), the hot wallet's outbox signs, stores, broadcasts and follows it, and flushSettlement.ts settles it.
import { type ChainClient, type Hex, SignerError, type Wallet } from "../domain/chain.ts";
import {
  type Address,
  type Bytes32,
  FACTORY_VERSIONS,
  type FactoryVersion,
  type FlushItem,
  factoryAddress,
  MAX_FLUSH_BATCH,
} from "../domain/forwarders.ts";
import { newRowId } from "../domain/ids.ts";
import {
  claimFlush,
  type FlushDeposit,
  markWaitingForGas,
  WAITING_FOR_GAS,
  waitingDeposits,
} from "../store/flushes.ts";
import { openHotTransactions } from "../store/hotTransactions.ts";
import { fenceScanLease, type Network, type ScanLease } from "../store/networks.ts";
import type { Store, Tx } from "../store/store.ts";
import {
  claimRecoveries,
  recoveriesStillWaiting,
  type StrayRecovery,
  waitingRecoveries,
} from "../store/strayRecoveries.ts";
import type { CrashPoint } from "./crashPoints.ts";
import { flushHandler } from "./flushSettlement.ts";
import { flushCalldata, withFreshness } from "./forwarders.ts";

import {
  broadcastHotTransaction,
  crash,
  freeFunds,
  type HotChain,
  type HotTxRequest,
  hotChainOf,
  OUTBOX_DEFAULTS,
  type OutboxLog,
  type OutboxOptions,
  queuedTokenBalances,
  storeHotTransactions,
  type WalletNow,
  walletNow,
} from "./outbox.ts";
import { followHotTransactions } from "./outboxFollowing.ts";
import { freshPassReads, nativeCoinOf, type PassReads } from "./passReads.ts";

/** Gas headroom over the node's estimate (a flush's cost can move between estimate and inclusion). */
const GAS_HEADROOM_PERCENT = 120n;

export { FLUSH_CRASH_POINTS } from "./crashPoints.ts";
export { flushHandler, ownAmounts } from "./flushSettlement.ts";

/** What the flushes use of the service: the store, the HD wallet (null: nothing is flushed), the batching bounds, the clock and the log. */
export interface FlushPorts {
  readonly store: Store;
  readonly wallet: Wallet | null;
  /** FLUSH_BATCH_SIZE and FLUSH_MAX_WAIT_MS: a flush is signed once this many deposits wait, or the oldest waited this long. */
  readonly batch: { readonly size: number; readonly maxWaitMs: number };
  /** The one clock of the flushes: every time they write and every wait they set (the outbox's too). */
  readonly now: () => Date;
  readonly log: OutboxLog;
}

/** One flush pass of a network: its chain as the outbox signs on it, the outbox's options, and the scanner lease its claim fences. */
interface FlushPass {
  chain: HotChain;
  options: OutboxOptions;
  lease: ScanLease | null;
  now: string;
}

/** One flush step: its clock's moment, the lease its claim fences (null only in tests), where a test kills it, and what its pass read. */
export interface FlushStep {
  now: string;
  lease?: ScanLease | null;
  crashAt?: CrashPoint | null;
  /** The worker's pass reads (passReads.ts); absent: the catalog is read for this step. */
  reads?: PassReads;
}

/**
 * One flush step of a network, run by the holder of its scanner lease (`lease`: the claim of a new
 * flush checks its token; null only where no lease is held, as in tests): the outbox follows the
 * network's open flush transactions (settled by flushHandler), then a new flush is planned when a
 * batch is due and none is open, so the hot wallet has at most one flush nonce open per network.
 * Answers how many transactions or deposits moved on.
 */
export async function flushNetwork(
  ports: FlushPorts,
  network: Network,
  client: ChainClient,
  { now, lease = null, crashAt = null, reads: passed }: FlushStep,
): Promise<number> {
  if (ports.wallet === null) return 0;
  const reads = passed ?? (await freshPassReads(ports.store));
  const native = nativeCoinOf(reads.catalog, network.name);
  const chain = await hotChainOf(ports.store, ports.wallet.hot(network.name), network, client, native?.ticker ?? null);
  const options: OutboxOptions = { ...OUTBOX_DEFAULTS, now: ports.now, log: ports.log, crashAt, head: reads.head };
  const followed = await followHotTransactions(
    ports.store,
    chain,
    { flush: flushHandler(chain.nativeCurrency) },
    options,
  );
  return followed + (await startFlush(ports, { chain, options, lease, now }));
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

/** Stray recoveries one flush carries at most (the operator's, rare): the rest of the batch is deposits. */
const MAX_RECOVERIES_PER_FLUSH = 10;

/** What a flush would carry: the operator's waiting stray recoveries first, then the waiting deposits. */
async function flushWork(ports: FlushPorts, network: string, factory: string, now: string) {
  return ports.store.transaction(async (tx) => {
    const recoveries = await waitingRecoveries(tx, network, factory, MAX_RECOVERIES_PER_FLUSH);
    const deposits = await waitingDeposits(tx, network, factory, now, MAX_FLUSH_BATCH - recoveries.length);
    return { recoveries, deposits };
  });
}

/** Due: a stray recovery waits (the operator asked now), or FLUSH_BATCH_SIZE deposits, or the oldest waited FLUSH_MAX_WAIT_MS. */
function flushDue(ports: FlushPorts, work: { recoveries: StrayRecovery[]; deposits: FlushDeposit[] }, now: string) {
  if (work.recoveries.length > 0) return true;
  const oldest = work.deposits[0];
  if (oldest === undefined) return false;
  const { size, maxWaitMs } = ports.batch;
  return work.deposits.length >= size || Date.parse(now) - Date.parse(oldest.createdAt) >= maxWaitMs;
}

/**
/**
 * The first factory of the hot wallet, current version first, with work due (flushDue). Each
 * deposit and stray recovery is flushed by the factory its address was derived from (recorded with
 * it): an address a previous version handed out is still emptied by that version's factory, never
 * lost to a new one.
 */
async function dueBatch(
  ports: FlushPorts,
  pass: FlushPass,
): Promise<{ factory: Address; version: FactoryVersion; recoveries: StrayRecovery[]; waiting: FlushDeposit[] } | null> {
  const { chain } = pass;
  for (const version of FACTORY_VERSIONS) {
    const factory = factoryAddress(chain.hot.address, version);
    const work = await flushWork(ports, chain.network, factory, pass.now);
    if (!flushDue(ports, work, pass.now)) continue;
    return { factory, version, recoveries: work.recoveries, waiting: work.deposits };
  }
  return null;
}

/** The batch's call: version 2's items say which forwarders have no code yet (from the node), so the factory deploys those without looking. */
async function batchCalldata(chain: HotChain, version: FactoryVersion, work: Parameters<typeof flushItemsOf>[0]) {
  const items = flushItemsOf(work);
  if (version === 1) return flushCalldata(items, 1);
  const hasCode = async (address: Address) => {
    const code = await chain.client.code(address as Hex);
    return code.ok ? code.value !== "0x" : null;
  };
  return flushCalldata(await withFreshness(items, hasCode, chain.hot.address as Address), version);
}

/**
 * Plans a flush of the waiting deposits and stray recoveries when a batch is due (flushDue) and no
 * flush of the network is open: its gas estimated, then
 * handed to the outbox, whose storing transaction runs the claim (the flush row and its deposits,
 * fenced by the scanner lease) before the nonce is taken; broadcast once stored. The hot wallet
 * pays all the gas (none is ever sent to a deposit address): uncovered, nothing is stored.
 */
async function startFlush(ports: FlushPorts, pass: FlushPass): Promise<number> {
  const { chain, options } = pass;
  const network = chain.network;
  if ((await openHotTransactions(ports.store, network, 1, "flush")).length > 0) return 0;
  const due = await dueBatch(ports, pass);
  if (due === null) return 0;
  const { factory, waiting } = due;
  const data = await batchCalldata(chain, due.version, [...due.recoveries, ...waiting]);
  if (!data.ok) {
    options.log.error({ network, error: data.error, deposits: waiting.length }, "flush: no call for the batch");
    return 0;
  }
  const estimate = await chain.client.estimateGas({ from: chain.hot.address, to: factory, data: data.value });
  const [wallet, tokenBalances] = await Promise.all([walletNow(chain), queuedTokenBalances(ports.store, chain)]);
  if (!estimate.ok || wallet === null || tokenBalances === null) {
    options.log.warn({ network, detail: estimate.ok ? null : estimate.detail }, "flush: the node did not answer");
    return 0;
  }
  const flush = { id: newRowId(), network, factory };
  const depositIds = waiting.map((d) => d.id);
  const recoveryIds = due.recoveries.map((r) => r.id);
  let claimed = false;
  const request: HotTxRequest = {
    purpose: "flush",
    purposeId: flush.id,
    call: { to: factory as Hex, value: 0n, data: data.value },
    gas: (estimate.value * GAS_HEADROOM_PERCENT) / 100n,
    tokens: null,
    claim: async (tx: Tx) => {
      claimed = true;
      if (pass.lease !== null) await fenceScanLease(tx, network, pass.lease, ports.now().toISOString());
      // Under the nonce lock: another process's flush of this network stored meanwhile waits first.
      if ((await openHotTransactions(tx, network, 1, "flush")).length > 0) return false;
      const at = ports.now().toISOString();
      if (!(await recoveriesStillWaiting(tx, recoveryIds))) return false;
      if (!(await claimFlush(tx, flush, depositIds, at))) return false;
      await claimRecoveries(tx, flush.id, recoveryIds, at);
      return true;
    },
  };
  let stored: Awaited<ReturnType<typeof storeHotTransactions>>;
  try {
    const submission = {
      wallet,
      tokenBalances,
      reserve: "other" as const,
      at: ports.now().toISOString(),
      log: options.log,
    };
    stored = await storeHotTransactions(ports.store, chain, [request], submission);
  } catch (error) {
    // A signer that did not sign: nothing stored, the deposits wait for the next pass.
    if (!(error instanceof SignerError)) throw error;
    options.log.warn({ network, code: error.code, reason: error.message }, "flush: the signer did not sign");
    return 0;
  }
  const t = stored[0];
  if (t === undefined) {
    // Never claimed: the outbox found the hot wallet's free coin short of the flush's gas.
    const ids = { deposits: depositIds, recoveries: recoveryIds };
    if (!claimed) await waitForGas(ports, pass, { request, wallet, tokenBalances, ids });
    return 0;
  }
  crash("after_sign", options);
  // A refused broadcast is no failure: the outbox's next follow broadcasts the same bytes again.
  await broadcastHotTransaction(ports.store, chain, t, options);
  return waiting.length + recoveryIds.length;
}

/**
 * A flush the hot wallet cannot pay for: each waiting deposit and stray recovery says so in its
 * lastError (what the flush needs, what is free: the balance less what is promised and what queued
 * payouts hold back), and one warn line is logged when they start waiting for gas, not at every
 * pass. The claim of the flush that moves them, once funded, clears it.
 */
async function waitForGas(
  ports: FlushPorts,
  pass: FlushPass,
  uncovered: {
    request: HotTxRequest;
    wallet: WalletNow;
    tokenBalances: Map<string, bigint>;
    ids: { deposits: string[]; recoveries: string[] };
  },
): Promise<void> {
  const { chain, options } = pass;
  const { request, wallet, tokenBalances, ids } = uncovered;
  const neededWei = request.gas * wallet.fees.maxFeePerGas;
  const free = await ports.store.transaction((tx) => freeFunds(tx, chain, wallet, tokenBalances, true));
  const freeWei = free.native > 0n ? free.native : 0n;
  const message = `${WAITING_FOR_GAS}: the flush needs ${neededWei} wei of ${chain.network}'s native coin (${request.gas} gas at ${wallet.fees.maxFeePerGas} wei), the hot wallet has ${freeWei} wei free`;
  const newlyWaiting = await ports.store.transaction((tx) =>
    markWaitingForGas(tx, ids, { prefix: WAITING_FOR_GAS, message }, pass.now),
  );
  if (newlyWaiting > 0) {
    options.log.warn(
      {
        network: chain.network,
        deposits: ids.deposits.length,
        recoveries: ids.recoveries.length,
        neededWei: neededWei.toString(),
        freeWei: freeWei.toString(),
        balanceWei: wallet.balance.toString(),
      },
      "flush: waiting for gas (fund the hot wallet)",
    );
  }
}
