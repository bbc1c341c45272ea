// The EVM payout rail, following: each payout transaction in flight to its confirmations (settling the payout), broadcast again when the node lost it, replaced with higher fees when overdue, and set aside when a foreign transaction took its nonce.

import type { ChainReceipt, Hex } from "../domain/chain.ts";
import { type Landed, landedOf } from "../domain/finality.ts";
import { bumpFees, isOverdue } from "../domain/payoutTransaction.ts";
import { findPayout, settlePayout } from "../store/payouts.ts";
import {
  insertPayoutTransaction,
  lockPayoutState,
  markForeignNonce,
  moveTransaction,
  openPayoutTransactions,
  type PayoutTransaction,
  postPayoutNetworkFee,
  reportPayoutProgress,
} from "../store/payoutTransactions.ts";
import type { Store } from "../store/store.ts";
import {
  broadcast,
  type ChainPayoutOptions,
  type PayoutChain,
  payoutCall,
  sign,
  storedView,
  suggestedFees,
} from "./payoutTransactions.ts";

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

/** What the node said of the hot wallet at the start of the batch. */
interface NodeView {
  head: bigint;
  latestNonce: number;
  pendingNonce: number;
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
  const mined = await landedOf(chain.client, group, (t) => t.hash as Hex, chain.confirmations, head);
  if (!mined.ok) return 0;
  if (mined.value) return followMined(store, chain, requestKey, group, mined.value, options);
  return followUnmined(store, chain, requestKey, group, { head, latestNonce, pendingNonce }, options);
}

/** One of the payout's transactions is in a block: recorded as mined until it is deep enough, then settled. */
async function followMined(
  store: Store,
  chain: PayoutChain,
  requestKey: string,
  group: PayoutTransaction[],
  mined: Landed<PayoutTransaction>,
  options: ChainPayoutOptions,
): Promise<number> {
  const now = () => new Date(options.now()).toISOString();
  const { tx: t, receipt } = mined;
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
  if (mined.deep) {
    await settleMined(store, chain, requestKey, group, t, receipt, now(), options);
    return 1;
  }
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

/**
 * None of the payout's transactions is in a block: one reorganised away waits again; a nonce used
 * by a foreign transaction sets the payout aside; what the node lost is broadcast again; an overdue
 * transaction is replaced.
 */
async function followUnmined(
  store: Store,
  chain: PayoutChain,
  requestKey: string,
  group: PayoutTransaction[],
  view: NodeView,
  options: ChainPayoutOptions,
): Promise<number> {
  const nonce = group[0]?.nonce ?? 0;
  const at = new Date(options.now()).toISOString();
  let moved = 0;
  for (const t of group.filter((g) => g.state === "mined")) {
    // Its block was reorganised away: it waits to be mined again.
    await store.transaction((tx) => moveTransaction(tx, t, "broadcast", { receipt: null }, at));
    t.state = "broadcast";
    moved++;
  }
  if (view.latestNonce > nonce) {
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
    } else if (t.state === "broadcast" && view.pendingNonce <= nonce) {
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
