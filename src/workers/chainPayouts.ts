// Live payouts on EVM networks: signs each payout's transaction and stores it before broadcasting it, follows it to its confirmations, replaces it when it is not mined in time, and waits for funds when the hot wallet is short.
import type { FastifyBaseLogger } from "fastify";
import { encodeFunctionData, erc20Abi, isAddress, keccak256, parseTransaction } from "viem";
import type { HDAccount } from "viem/accounts";
import type { ServiceContext } from "../app/context.ts";
import { screenPayoutDestination } from "../app/screening.ts";
import type { ChainClient, ChainReceipt, Hex } from "../domain/chain.ts";
import { bumpFees, confirmationsOf, type Fees, initialFees, isOverdue } from "../domain/payoutTransaction.ts";
import { listCurrencies } from "../store/currencies.ts";
import { listNetworks, takeHotNonce } from "../store/networks.ts";
import { findPayout, settlePayout } from "../store/payouts.ts";
import {
  AWAITING_FUNDS,
  capInWei,
  findPayoutSettings,
  insertPayoutTransaction,
  lockHotNonce,
  lockPayoutState,
  markForeignNonce,
  moveTransaction,
  type NewPayoutTransaction,
  openPayoutTransactions,
  type PayoutTransaction,
  postPayoutNetworkFee,
  queuedPayoutsOfNetwork,
  reportPayoutProgress,
  takeQueuedPayout,
} from "../store/payoutTransactions.ts";
import type { Store } from "../store/store.ts";
import { openFundings } from "../store/sweeps.ts";
import { type Loop, startLoop } from "./loop.ts";
import { fillNonceGaps } from "./nonceGaps.ts";

/** One network the hot wallet pays out on, as the worker needs it. */
export interface PayoutChain {
  network: string;
  chainId: number;
  confirmations: number;
  client: ChainClient;
  /** The hot wallet (m/44'/60'/0'/0/0). */
  hot: HDAccount;
  /** Ticker of the network's native coin in the catalog (its gas is ledgered in it); null when none. */
  nativeCurrency: string | null;
  /** The operator's cap on maxFeePerGas, in wei. */
  maxFeePerGasWei: bigint;
  /** How long a transaction may stay unmined before it is replaced with higher fees. */
  replaceAfterMs: number;
}

/**
 * Named points where a test process kills itself (SIGKILL) to prove crash safety:
 * `after_sign` (the signed transaction is committed, not broadcast), `after_broadcast` (the node
 * took it, the database does not know yet). Read from PAYOUT_TEST_CRASH_AT; never set in production.
 */
export type CrashPoint = "after_sign" | "after_broadcast";

export interface ChainPayoutOptions {
  now: () => Date;
  /** Bound on the payouts signed per network and batch. */
  batchSize: number;
  /** Bound on the payouts of one network in flight (signed, not yet final); each batch follows them all. */
  maxInFlight: number;
  /** Bound on the transactions one payout may have at its nonce (the first and its replacements). */
  maxReplacements: number;
  publicBaseUrl: string;
  log: FastifyBaseLogger;
  crashAt?: CrashPoint | null;
  /** Screening of a destination just before its payout is signed (product §21); none: not screened here. */
  screenDestination?: (address: string) => Promise<"clear" | "listed" | "pending">;
}

export const CHAIN_PAYOUT_DEFAULTS = { batchSize: 20, maxInFlight: 64, maxReplacements: 8 } as const;

/** Gas estimates are for the state the node sees now; the margin covers a change before mining (unused gas is not paid). */
const GAS_MARGIN_PERCENT = 20n;

function crash(point: CrashPoint, options: ChainPayoutOptions): void {
  if (options.crashAt === point) process.kill(process.pid, "SIGKILL");
}

/** The call a payout transaction makes: a plain transfer, or the token's `transfer(recipient, amount)`. */
export function payoutCall(
  assetContract: string | null,
  recipient: string,
  amount: bigint,
): { to: Hex; value: bigint; data?: Hex } {
  if (assetContract === null) return { to: recipient as Hex, value: amount };
  return {
    to: assetContract as Hex,
    value: 0n,
    data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [recipient as Hex, amount] }),
  };
}

async function sign(
  chain: PayoutChain,
  call: { to: Hex; value: bigint; data?: Hex },
  nonce: number,
  gas: bigint,
  fees: Fees,
) {
  const raw = await chain.hot.signTransaction({
    type: "eip1559",
    chainId: chain.chainId,
    nonce,
    to: call.to,
    value: call.value,
    ...(call.data ? { data: call.data } : {}),
    gas,
    maxFeePerGas: fees.maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
  });
  return { raw, hash: keccak256(raw) };
}

/** What the node suggests, as EIP-1559 fees (a chain without a base fee: its gas price for both). */
async function suggestedFees(chain: PayoutChain): Promise<Fees | null> {
  const fees = await chain.client.fees();
  if (!fees.ok) return null;
  const { gasPrice, maxFeePerGas, maxPriorityFeePerGas } = fees.value;
  return { maxFeePerGas: maxFeePerGas ?? gasPrice, maxPriorityFeePerGas: maxPriorityFeePerGas ?? gasPrice };
}

/** The most a signed gas funding can cost the hot wallet: its value and all its gas. */
function fundingCost(raw: string): bigint {
  const t = parseTransaction(raw as Hex);
  const price = t.gasPrice ?? t.maxFeePerGas ?? 0n;
  return (t.value ?? 0n) + (t.gas ?? 0n) * price;
}

/** Bound on the sweeps' gas fundings the planner reads (sweeps run at most SWEEP_BATCH at a time). */
const MAX_FUNDINGS_RESERVED = 500;

/**
 * Native coin and tokens the hot wallet has already promised to transactions not yet mined: payout
 * transactions and the gas fundings of sweeps (`fundings`, their signed bytes).
 */
function committedFunds(open: readonly PayoutTransaction[], fundings: readonly string[] = []) {
  const byNonce = new Map<number, PayoutTransaction[]>();
  for (const t of open) {
    if (t.state === "mined") continue; // the latest balance already shows it
    byNonce.set(t.nonce, [...(byNonce.get(t.nonce) ?? []), t]);
  }
  let native = fundings.reduce((sum, raw) => sum + fundingCost(raw), 0n);
  const tokens = new Map<string, bigint>();
  for (const group of byNonce.values()) {
    // Whichever of a nonce's transactions is mined, the wallet pays one of them: the dearest.
    native += group.reduce((max, t) => {
      const cost = t.valueWei + t.gasLimit * t.fees.maxFeePerGas;
      return cost > max ? cost : max;
    }, 0n);
    const first = group[0];
    if (first?.assetContract) tokens.set(first.assetContract, (tokens.get(first.assetContract) ?? 0n) + first.amount);
  }
  return { native, tokens, nonces: byNonce.size };
}

/**
 * Signs what the hot wallet can cover of a network's queued payouts, oldest first, and
 * broadcasts it. A payout it cannot cover waits (`awaiting_funds`) and so do those behind it:
 * payouts leave in the order they were accepted. Answers how many payouts it moved.
 */
export async function signQueuedPayouts(
  store: Store,
  chain: PayoutChain,
  options: ChainPayoutOptions,
): Promise<number> {
  const { log } = options;
  const queued = await queuedPayoutsOfNetwork(store, chain.network, options.batchSize);
  if (queued.length === 0) return 0;
  const open = await openPayoutTransactions(store, chain.network, options.maxInFlight * options.maxReplacements);
  const committed = committedFunds(open, await openFundings(store, chain.network, MAX_FUNDINGS_RESERVED));
  if (committed.nonces >= options.maxInFlight) return 0;

  const hot = chain.hot.address;
  const [balance, pendingNonce, suggested] = await Promise.all([
    chain.client.balance(hot),
    chain.client.nonce(hot, "pending"),
    suggestedFees(chain),
  ]);
  if (!balance.ok || !pendingNonce.ok || suggested === null) {
    log.warn({ network: chain.network }, "payouts: the node did not answer; signing later");
    return 0;
  }
  const fees = initialFees(suggested, chain.maxFeePerGasWei);
  let nativeLeft = balance.value - committed.native;
  const tokenLeft = new Map<string, bigint>();
  const tokenHeld = new Map<string, bigint>();
  let moved = 0;

  interface Planned {
    requestKey: string;
    call: { to: Hex; value: bigint; data?: Hex };
    assetContract: string | null;
    recipient: string;
    amount: bigint;
    gas: bigint;
  }
  const planned: Planned[] = [];
  let waitingFrom = -1;
  for (const [i, p] of queued.entries()) {
    const amount = BigInt(p.amount);
    const contract = p.contractAddress?.toLowerCase() ?? null;
    const at = new Date(options.now()).toISOString();
    if (!isAddress(p.destination, { strict: false })) {
      // Accepted before addresses were checked: nothing can be sent there, nothing left.
      await settleUnsent(store, p.requestKey, "invalid_destination", at, options);
      moved++;
      continue;
    }
    const screened = await screenBeforeSigning(store, p, at, options);
    if (screened === "failed") {
      moved++;
      continue;
    }
    if (screened === "wait") return moved;
    if (contract !== null && !tokenLeft.has(contract)) {
      const held = await chain.client.tokenBalance(contract as Hex, hot);
      if (!held.ok) return moved;
      tokenHeld.set(contract, held.value);
      tokenLeft.set(contract, held.value - (committed.tokens.get(contract) ?? 0n));
    }
    const call = payoutCall(contract, p.destination, amount);
    const tokensCovered = contract === null || (tokenLeft.get(contract) ?? 0n) >= amount;
    if (!tokensCovered || nativeLeft < call.value) {
      waitingFrom = i;
      break;
    }
    const estimate = await chain.client.estimateGas({ from: hot, ...call });
    if (!estimate.ok) {
      if (/revert/i.test(estimate.detail ?? "")) {
        // The transfer would fail on chain (a token that refuses it): nothing is sent, the payout fails.
        await settleUnsent(store, p.requestKey, "rejected", at, options);
        moved++;
        continue;
      }
      log.warn({ network: chain.network, detail: estimate.detail }, "payouts: gas estimate failed; signing later");
      break;
    }
    const gas = (estimate.value * (100n + GAS_MARGIN_PERCENT) + 99n) / 100n;
    const cost = call.value + gas * fees.maxFeePerGas;
    if (nativeLeft < cost) {
      waitingFrom = i;
      break;
    }
    nativeLeft -= cost;
    if (contract !== null) tokenLeft.set(contract, (tokenLeft.get(contract) ?? 0n) - amount);
    planned.push({ requestKey: p.requestKey, call, assetContract: contract, recipient: p.destination, amount, gas });
  }
  if (waitingFrom >= 0) {
    const at = new Date(options.now()).toISOString();
    const waiting = queued.slice(waitingFrom).filter((p) => p.processorStatus !== AWAITING_FUNDS);
    if (waiting.length > 0) {
      await store.transaction(async (tx) => {
        for (const p of waiting) await reportPayoutProgress(tx, p.requestKey, { processorStatus: AWAITING_FUNDS }, at);
      });
      log.warn(
        { network: chain.network, waiting: queued.length - waitingFrom },
        "payouts wait for the hot wallet to be funded",
      );
    }
  }
  if (planned.length === 0) return moved;

  // One transaction: each payout's nonce taken (the network row locked), its transaction signed and
  // stored, the payout taken. Nothing is broadcast before it commits; a crash before that leaves
  // the payouts queued and no nonce used.
  const signed = await store.transaction(async (tx) => {
    const now = new Date(options.now()).toISOString();
    await lockHotNonce(tx, chain.network);
    // Another process may have signed since the plan was made: what the wallet has promised is read
    // again under the lock, and a plan it no longer covers waits for the next batch.
    const promised = committedFunds(
      await openPayoutTransactions(tx, chain.network, options.maxInFlight * options.maxReplacements),
      await openFundings(tx, chain.network, MAX_FUNDINGS_RESERVED),
    );
    let nativeFree = balance.value - promised.native;
    const tokenFree = new Map([...tokenHeld].map(([c, held]) => [c, held - (promised.tokens.get(c) ?? 0n)]));
    const stored: PayoutTransaction[] = [];
    for (const plan of planned) {
      const cost = plan.call.value + plan.gas * fees.maxFeePerGas;
      const tokensFree = plan.assetContract === null ? null : (tokenFree.get(plan.assetContract) ?? 0n);
      if (nativeFree < cost || (tokensFree !== null && tokensFree < plan.amount)) break;
      if ((await lockPayoutState(tx, plan.requestKey)) !== "queued") continue;
      const nonce = await takeHotNonce(tx, chain.network, hot, pendingNonce.value);
      nativeFree -= cost;
      if (plan.assetContract !== null && tokensFree !== null)
        tokenFree.set(plan.assetContract, tokensFree - plan.amount);
      const { raw, hash } = await sign(chain, plan.call, nonce, plan.gas, fees);
      const row = {
        payoutRequestKey: plan.requestKey,
        network: chain.network,
        chainId: chain.chainId,
        fromAddress: hot,
        nonce,
        hash,
        raw,
        toAddress: plan.call.to,
        assetContract: plan.assetContract,
        recipient: plan.recipient,
        amount: plan.amount,
        valueWei: plan.call.value,
        gasLimit: plan.gas,
        fees,
        replacesId: null,
      };
      const id = await insertPayoutTransaction(tx, row, now);
      const taken = await takeQueuedPayout(tx, plan.requestKey, hash, now);
      if (!taken) throw new Error(`invariant violated: payout ${plan.requestKey} locked queued but not taken`);
      stored.push(storedView(id, row, now));
    }
    return stored;
  });
  crash("after_sign", options);
  for (const t of signed) await broadcast(store, chain, t, options);
  return moved + signed.length;
}

function storedView(id: string, row: NewPayoutTransaction, now: string): PayoutTransaction {
  return {
    ...row,
    id,
    hash: row.hash.toLowerCase(),
    fromAddress: row.fromAddress.toLowerCase(),
    state: "signed",
    broadcastAt: null,
    broadcastCount: 0,
    lastError: null,
    blockNumber: null,
    blockHash: null,
    receiptStatus: null,
    gasUsed: null,
    effectiveGasPrice: null,
    createdAt: now,
    updatedAt: now,
  };
}

/**
 * The destination's screening just before signing (product §21). Listed since the payout was
 * accepted: nothing is signed, the payout fails and the merchant is credited back (`failed`). No
 * answer: this payout and those behind it wait, since they leave in order (`wait`).
 */
async function screenBeforeSigning(
  store: Store,
  payout: { requestKey: string; destination: string },
  at: string,
  options: ChainPayoutOptions,
): Promise<"sign" | "failed" | "wait"> {
  const screened = (await options.screenDestination?.(payout.destination)) ?? "clear";
  if (screened === "pending") return "wait";
  if (screened === "clear") return "sign";
  await settleUnsent(store, payout.requestKey, "destination_screened", at, options);
  return "failed";
}

async function settleUnsent(store: Store, requestKey: string, status: string, at: string, options: ChainPayoutOptions) {
  const settled = await store.transaction((tx) =>
    settlePayout(
      tx,
      requestKey,
      { outcome: "failed", processorStatus: status, processorTxId: null },
      at,
      options.publicBaseUrl,
      {
        state: "queued",
      },
    ),
  );
  if (!settled.ok) options.log.warn({ requestKey, error: settled.error }, "unsent payout settled meanwhile");
  else options.log.warn({ requestKey, status }, "payout failed before anything was signed: debit credited back");
}

/** Sends the stored raw transaction (again): the node answers the same hash for one it already holds. */
async function broadcast(store: Store, chain: PayoutChain, t: PayoutTransaction, options: ChainPayoutOptions) {
  const sent = await chain.client.sendRawTransaction(t.raw as Hex);
  const now = new Date(options.now()).toISOString();
  if (!sent.ok) {
    options.log.warn(
      { network: chain.network, hash: t.hash, detail: sent.detail },
      "payout transaction broadcast failed",
    );
    await store.transaction((tx) => moveTransaction(tx, t, t.state, { lastError: sent.detail ?? sent.error }, now));
    return;
  }
  crash("after_broadcast", options);
  await store.transaction(async (tx) => {
    if (await moveTransaction(tx, t, "broadcast", { broadcastAt: now, lastError: null }, now)) {
      await reportPayoutProgress(tx, t.payoutRequestKey, { processorStatus: "broadcast", processorTxId: t.hash }, now);
    }
  });
}

/**
 * Follows the network's open payout transactions: records receipts, settles payouts once their
 * transaction is `confirmations` deep (completed, or failed and credited back when it reverted),
 * broadcasts again what the node lost or never got, and replaces what is overdue.
 */
export async function followPayoutTransactions(
  store: Store,
  chain: PayoutChain,
  options: ChainPayoutOptions,
): Promise<number> {
  // Every payout in flight is looked at each batch (at most maxInFlight, and their replacements).
  const open = await openPayoutTransactions(store, chain.network, options.maxInFlight * options.maxReplacements);
  if (open.length === 0) return 0;
  const hot = chain.hot.address;
  const [head, latestNonce, pendingNonce] = await Promise.all([
    chain.client.headBlockNumber(),
    chain.client.nonce(hot, "latest"),
    chain.client.nonce(hot, "pending"),
  ]);
  if (!head.ok || !latestNonce.ok || !pendingNonce.ok) {
    options.log.warn({ network: chain.network }, "payouts: the node did not answer; following later");
    return 0;
  }
  const byPayout = new Map<string, PayoutTransaction[]>();
  for (const t of open) byPayout.set(t.payoutRequestKey, [...(byPayout.get(t.payoutRequestKey) ?? []), t]);
  let moved = 0;
  let firstFailure: unknown = null;
  for (const [requestKey, group] of [...byPayout].slice(0, options.maxInFlight)) {
    try {
      moved += await followPayout(
        store,
        chain,
        requestKey,
        group,
        head.value,
        latestNonce.value,
        pendingNonce.value,
        options,
      );
    } catch (error) {
      // One payout that cannot be followed (a bug, a lost connection) holds no other back; the
      // batch still fails afterwards, so the loop reports it and the payout is tried again.
      options.log.error({ err: error, requestKey, network: chain.network }, "payout transaction not followed");
      firstFailure ??= error;
    }
  }
  if (firstFailure !== null) throw firstFailure;
  return moved;
}

async function followPayout(
  store: Store,
  chain: PayoutChain,
  requestKey: string,
  group: PayoutTransaction[],
  head: bigint,
  latestNonce: number,
  pendingNonce: number,
  options: ChainPayoutOptions,
): Promise<number> {
  const now = () => new Date(options.now()).toISOString();
  let mined: { t: PayoutTransaction; receipt: ChainReceipt } | null = null;
  for (const t of group) {
    const receipt = await chain.client.receipt(t.hash as Hex);
    if (!receipt.ok) return 0;
    if (receipt.value) {
      mined = { t, receipt: receipt.value };
      break;
    }
  }
  const nonce = group[0]?.nonce ?? 0;
  if (mined) {
    const { t, receipt } = mined;
    // Another of the payout's transactions recorded as mined is not in a block any more (its block
    // was reorganised away, and this one took the nonce): it waits again, and is replaced at settling.
    const stale = group.filter((g) => g.id !== t.id && g.state === "mined");
    if (stale.length > 0) {
      const at = now();
      await store.transaction(async (tx) => {
        for (const g of stale) await moveTransaction(tx, g, "broadcast", { receipt: null }, at);
      });
      for (const g of stale) g.state = "broadcast";
    }
    const depth = confirmationsOf(receipt.blockNumber, head);
    if (depth < BigInt(chain.confirmations)) {
      if (t.state === "mined" && t.blockHash === receipt.blockHash) return 0;
      const at = now();
      await store.transaction(async (tx) => {
        const from = t.state === "mined" ? { ...t, state: "broadcast" as const } : t;
        if (t.state === "mined") await moveTransaction(tx, t, "broadcast", { receipt: null }, at);
        await moveTransaction(tx, from, "mined", { receipt }, at);
        await reportPayoutProgress(tx, requestKey, { processorStatus: "mined", processorTxId: t.hash }, at);
      });
      return 1;
    }
    await settleMined(store, chain, requestKey, group, t, receipt, now(), options);
    return 1;
  }
  // None of the payout's transactions is in a block.
  const at = now();
  let moved = 0;
  for (const t of group.filter((g) => g.state === "mined")) {
    // Its block was reorganised away: it waits to be mined again.
    await store.transaction((tx) => moveTransaction(tx, t, "broadcast", { receipt: null }, at));
    t.state = "broadcast";
    moved++;
  }
  if (latestNonce > nonce) {
    // The nonce was used on chain, by no transaction of this payout: one the service did not store.
    const marked = await store.transaction((tx) => markForeignNonce(tx, requestKey, group, at));
    if (marked)
      options.log.error({ requestKey, nonce }, "payout nonce used by a foreign transaction: needs reconciliation");
    return moved + 1;
  }
  for (const t of group) {
    if (t.state === "signed" || t.state === "dropped") {
      await broadcast(store, chain, t, options);
      moved++;
    } else if (t.state === "broadcast" && pendingNonce <= nonce) {
      // The node holds nothing at this nonce: it dropped the transaction. The same bytes go again.
      await store.transaction((tx) => moveTransaction(tx, t, "dropped", {}, at));
      await broadcast(store, chain, { ...t, state: "dropped" }, options);
      moved++;
    }
  }
  const newest = group[group.length - 1];
  if (
    newest &&
    // A transaction the node never took (refused as underpriced, say) is replaced like one it sits on.
    (newest.state === "broadcast" || newest.state === "signed" || newest.state === "dropped") &&
    isOverdue(newest.createdAt, at, chain.replaceAfterMs) &&
    group.length < options.maxReplacements
  ) {
    moved += await replace(store, chain, newest, options);
  }
  return moved;
}

/** Replaces an overdue transaction at its nonce with the same call and higher fees (still one payout). */
async function replace(store: Store, chain: PayoutChain, newest: PayoutTransaction, options: ChainPayoutOptions) {
  const suggested = await suggestedFees(chain);
  if (suggested === null) return 0;
  const bumped = bumpFees(newest.fees, suggested, chain.maxFeePerGasWei);
  if (!bumped.ok) {
    options.log.warn(
      { hash: newest.hash, network: chain.network },
      "overdue payout transaction at the fee cap: not replaced",
    );
    return 0;
  }
  const call = payoutCall(newest.assetContract, newest.recipient, newest.amount);
  const replacement = await store.transaction(async (tx) => {
    if ((await lockPayoutState(tx, newest.payoutRequestKey)) !== "sent") return null;
    const at = new Date(options.now()).toISOString();
    const { raw, hash } = await sign(chain, call, newest.nonce, newest.gasLimit, bumped.value);
    const row = {
      payoutRequestKey: newest.payoutRequestKey,
      network: newest.network,
      chainId: newest.chainId,
      fromAddress: newest.fromAddress,
      nonce: newest.nonce,
      hash,
      raw,
      toAddress: newest.toAddress,
      assetContract: newest.assetContract,
      recipient: newest.recipient,
      amount: newest.amount,
      valueWei: newest.valueWei,
      gasLimit: newest.gasLimit,
      fees: bumped.value,
      replacesId: newest.id,
    };
    const id = await insertPayoutTransaction(tx, row, at);
    await reportPayoutProgress(tx, newest.payoutRequestKey, { processorStatus: "signed", processorTxId: hash }, at);
    return storedView(id, row, at);
  });
  if (!replacement) return 0;
  options.log.info(
    { requestKey: newest.payoutRequestKey, replaced: newest.hash, hash: replacement.hash },
    "payout transaction not mined in time: replaced with higher fees",
  );
  await broadcast(store, chain, replacement, options);
  return 1;
}

/**
 * The payout's transaction is `confirmations` deep: in one database transaction, it becomes
 * confirmed (the payout completed) or reverted (the payout failed, its debit credited back), the
 * payout's other transactions at its nonce become replaced, and the gas is ledgered.
 */
async function settleMined(
  store: Store,
  chain: PayoutChain,
  requestKey: string,
  group: PayoutTransaction[],
  t: PayoutTransaction,
  receipt: ChainReceipt,
  at: string,
  options: ChainPayoutOptions,
) {
  const success = receipt.status === "success";
  await store.transaction(async (tx) => {
    if ((await lockPayoutState(tx, requestKey)) === null) return;
    let current = t;
    if (current.state !== "mined") {
      await moveTransaction(tx, current, "mined", { receipt }, at);
      current = { ...current, state: "mined" };
    }
    await moveTransaction(tx, current, success ? "confirmed" : "reverted", { receipt }, at);
    for (const other of group) if (other.id !== t.id) await moveTransaction(tx, other, "replaced", {}, at);
    const payout = await findPayout(tx, requestKey);
    if (payout && chain.nativeCurrency) {
      await postPayoutNetworkFee(
        tx,
        payout,
        chain.nativeCurrency,
        receipt.gasUsed * receipt.effectiveGasPrice,
        t.hash,
        at,
      );
    }
    const settled = await settlePayout(
      tx,
      requestKey,
      {
        outcome: success ? "completed" : "failed",
        processorStatus: success ? "confirmed" : "reverted",
        processorTxId: t.hash,
      },
      at,
      options.publicBaseUrl,
      { state: "sent" },
    );
    if (!settled.ok) options.log.warn({ requestKey, error: settled.error }, "mined payout was settled meanwhile");
  });
  if (!success)
    options.log.warn({ requestKey, hash: t.hash }, "payout transaction reverted: payout failed, debit credited back");
}

/** One bounded batch over every network: fill nonce gaps, follow what is in flight, then sign what can go out. */
export async function runChainPayoutBatch(
  store: Store,
  chains: readonly PayoutChain[],
  options: ChainPayoutOptions,
): Promise<number> {
  let moved = 0;
  let firstFailure: unknown = null;
  // A failure on one network (or in following) keeps neither the signing nor the other networks
  // waiting; the batch fails after them, so the loop reports it.
  for (const chain of chains) {
    for (const work of [fillNonceGaps, followPayoutTransactions, signQueuedPayouts]) {
      try {
        moved += await work(store, chain, options);
      } catch (error) {
        firstFailure ??= error;
      }
    }
  }
  if (firstFailure !== null) throw firstFailure;
  return moved;
}

/** The networks this process pays out on: live mode with the wallet set, every configured network. */
export async function payoutChainsOf(ctx: ServiceContext): Promise<PayoutChain[]> {
  if (ctx.config.serviceMode !== "live" || ctx.wallet === null) return [];
  const wallet = ctx.wallet;
  const [networks, currencies] = await Promise.all([listNetworks(ctx.store, ctx.box), listCurrencies(ctx.store)]);
  return Promise.all(
    networks.map(async (n) => {
      const settings = await findPayoutSettings(ctx.store, n.name);
      return {
        network: n.name,
        chainId: n.chainId,
        confirmations: n.confirmations,
        client: ctx.chains.for(n.name, n.rpcUrl),
        hot: wallet.hot(),
        nativeCurrency: currencies.find((c) => c.network === n.name && c.contractAddress === null)?.ticker ?? null,
        maxFeePerGasWei: capInWei(settings.maxFeePerGasGwei),
        replaceAfterMs: settings.replaceAfterSeconds * 1000,
      };
    }),
  );
}

function crashPointOf(env: NodeJS.ProcessEnv): CrashPoint | null {
  const point = env.PAYOUT_TEST_CRASH_AT;
  return point === "after_sign" || point === "after_broadcast" ? point : null;
}

export function startChainPayoutLoop(
  ctx: ServiceContext,
  log: FastifyBaseLogger,
  options: { autoStart: boolean; idleMs?: number },
): Loop {
  const crashAt = crashPointOf(process.env);
  return startLoop({
    name: "chainPayouts",
    idleMs: options.idleMs ?? ctx.config.chainPayoutPollMs,
    autoStart: options.autoStart,
    log,
    runBatch: async () =>
      runChainPayoutBatch(ctx.store, await payoutChainsOf(ctx), {
        now: () => new Date(),
        ...CHAIN_PAYOUT_DEFAULTS,
        publicBaseUrl: ctx.config.publicBaseUrl,
        log,
        crashAt,
        screenDestination: (address) => screenPayoutDestination(ctx, address),
      }),
  });
}
