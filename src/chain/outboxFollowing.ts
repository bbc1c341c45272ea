// The hot wallet's one outbox (product §26), following side: each nonce in flight to its confirmations (then its purpose settles it), broadcast again when the node lost it, replaced with higher fees when overdue, and handed back to its purpose when a transaction the service did not store took the nonce.
import type { ChainReceipt, Hex } from "../domain/chain.ts";
import { type Landed, landedOf } from "../domain/finality.ts";
import { bumpFees, type HotTxPurpose, isOverdue } from "../domain/hotTransaction.ts";
import {
  type HotTransaction,
  insertHotTransaction,
  lockHotNonce,
  moveHotTransaction,
  openHotTransactions,
  replaceOthersAtNonce,
} from "../store/hotTransactions.ts";
import type { Store, Tx } from "../store/store.ts";
import {
  broadcastHotTransaction,
  type HotChain,
  type HotTxProgress,
  logHotTransaction,
  type OutboxOptions,
  signCall,
  suggestedFees,
} from "./outbox.ts";

/**
 * What one purpose does with its transactions: settle the work once one is final, hear that a
 * foreign transaction took the nonce, hear progress, and say whether it still wants a replacement.
 * Each runs inside the outbox's database transaction that moved the rows.
 */
export interface HotTxHandler {
  /** `mined` is the network's confirmations deep: success or reverted (`receipt.status`); the others at its nonce are replaced. */
  settle(tx: Tx, mined: HotTransaction, receipt: ChainReceipt, at: string): Promise<void>;
  /** None of `group` can be mined any more (another transaction used the nonce); they are marked replaced. */
  lost(tx: Tx, group: readonly HotTransaction[], at: string): Promise<void>;
  progress?(tx: Tx, t: HotTransaction, progress: HotTxProgress, at: string): Promise<void>;
  /** Still wanted (a payout still `sent`): an overdue transaction is replaced only then. Absent: always. */
  mayReplace?(tx: Tx, t: HotTransaction): Promise<boolean>;
}

export type HotTxHandlers = { readonly [P in HotTxPurpose]?: HotTxHandler };

/** What the node said of the hot wallet at the start of the pass. */
interface NodeView {
  head: bigint;
  latestNonce: number;
  pendingNonce: number;
}

interface Following {
  store: Store;
  chain: HotChain;
  handlers: HotTxHandlers;
  options: OutboxOptions;
}

function handlerOf(f: Following, t: HotTransaction): HotTxHandler {
  const handler = f.handlers[t.purpose];
  if (handler === undefined) throw new Error(`no handler for the outbox's ${t.purpose} transactions`);
  return handler;
}

/**
 * Follows the network's open transactions of the purposes handled, nonce by nonce: records
 * receipts, settles once deep, broadcasts again what the node lost or never got, replaces what is
 * overdue. One nonce that fails holds no other back; the pass fails afterwards so the loop says so.
 */
export async function followHotTransactions(
  store: Store,
  chain: HotChain,
  handlers: HotTxHandlers,
  options: OutboxOptions,
): Promise<number> {
  const all = await openHotTransactions(store, chain.network, options.maxInFlight * options.maxReplacements);
  const open = all.filter((t) => handlers[t.purpose] !== undefined);
  if (open.length === 0) return 0;
  const hot = chain.hot.address;
  const [head, latestNonce, pendingNonce] = await Promise.all([
    options.head === undefined || options.head === null
      ? chain.client.headBlockNumber()
      : { ok: true as const, value: options.head },
    chain.client.nonce(hot, "latest"),
    chain.client.nonce(hot, "pending"),
  ]);
  if (!head.ok || !latestNonce.ok || !pendingNonce.ok) {
    options.log.warn({ network: chain.network }, "outbox: the node did not answer; following later");
    return 0;
  }
  const byNonce = new Map<number, HotTransaction[]>();
  for (const t of open) byNonce.set(t.nonce, [...(byNonce.get(t.nonce) ?? []), t]);
  const view = { head: head.value, latestNonce: latestNonce.value, pendingNonce: pendingNonce.value };
  const f: Following = { store, chain, handlers, options };
  let moved = 0;
  let firstFailure: unknown = null;
  for (const group of [...byNonce.values()].slice(0, options.maxInFlight)) {
    try {
      moved += await followNonce(f, group, view);
    } catch (error) {
      const first = group[0];
      options.log.error(
        { err: error, network: chain.network, purpose: first?.purpose, purposeId: first?.purposeId },
        "hot-wallet transaction not followed",
      );
      firstFailure ??= error;
    }
  }
  if (firstFailure !== null) throw firstFailure;
  return moved;
}

async function followNonce(f: Following, group: HotTransaction[], view: NodeView): Promise<number> {
  const mined = await landedOf(f.chain.client, group, (t) => t.hash as Hex, f.chain.confirmations, view.head);
  if (!mined.ok) return 0;
  if (mined.value) return followMined(f, group, mined.value);
  return followUnmined(f, group, view);
}

/** One of the nonce's transactions is in a block: recorded as mined until it is deep enough, then settled. */
async function followMined(f: Following, group: HotTransaction[], mined: Landed<HotTransaction>): Promise<number> {
  const now = () => f.options.now().toISOString();
  const { tx: t, receipt } = mined;
  // Another of the nonce's transactions recorded as mined is not in a block any more (its block was
  // reorganised away, and this one took the nonce): it waits again, and is replaced at settling.
  const stale = group.filter((g) => g.id !== t.id && g.state === "mined");
  if (stale.length > 0) {
    const at = now();
    await f.store.transaction(async (tx) => {
      for (const g of stale) await moveHotTransaction(tx, g, "broadcast", { receipt: null }, at);
    });
    for (const g of stale) g.state = "broadcast";
  }
  if (mined.deep) {
    await settleMined(f, t, receipt, now());
    return 1;
  }
  if (t.state === "mined" && t.blockHash === receipt.blockHash) return 0;
  const at = now();
  const moved = await f.store.transaction(async (tx) => {
    const from = t.state === "mined" ? { ...t, state: "broadcast" as const } : t;
    if (t.state === "mined") await moveHotTransaction(tx, t, "broadcast", { receipt: null }, at);
    // Compare-and-set: a process that recorded it first has reported its progress and logged it.
    if (!(await moveHotTransaction(tx, from, "mined", { receipt }, at))) return false;
    await handlerOf(f, t).progress?.(tx, t, "mined", at);
    return true;
  });
  if (!moved) return 0;
  logHotTransaction(f.options.log, "mined", t, { block: receipt.blockNumber.toString() });
  return 1;
}

/**
 * The nonce's transaction is `confirmations` deep: in one database transaction it becomes
 * confirmed or reverted, the others at its nonce replaced, and its purpose settles the work.
 */
async function settleMined(f: Following, t: HotTransaction, receipt: ChainReceipt, at: string): Promise<void> {
  const success = receipt.status === "success";
  const settled = await f.store.transaction(async (tx) => {
    let current = t;
    if (current.state !== "mined") {
      if (!(await moveHotTransaction(tx, current, "mined", { receipt }, at))) return false;
      current = { ...current, state: "mined" };
    }
    // Compare-and-set: another process that settled it first (and logged it) leaves nothing to do here.
    if (!(await moveHotTransaction(tx, current, success ? "confirmed" : "reverted", { receipt }, at))) return false;
    await replaceOthersAtNonce(tx, t, at);
    await handlerOf(f, t).settle(tx, { ...current, state: success ? "confirmed" : "reverted" }, receipt, at);
    return true;
  });
  if (!settled) return;
  if (success) logHotTransaction(f.options.log, "confirmed", t, { gasUsed: receipt.gasUsed.toString() });
  else
    f.options.log.warn(
      { network: f.chain.network, purpose: t.purpose, purposeId: t.purposeId, hash: t.hash },
      "hot-wallet transaction reverted",
    );
}

/**
 * None of the nonce's transactions is in a block: one reorganised away waits again; a nonce used
 * by a foreign transaction goes back to its purpose; what the node lost is broadcast again; an
 * overdue transaction is replaced.
 */
async function followUnmined(f: Following, group: HotTransaction[], view: NodeView): Promise<number> {
  const nonce = group[0]?.nonce ?? 0;
  const at = f.options.now().toISOString();
  let moved = 0;
  for (const t of group.filter((g) => g.state === "mined")) {
    await f.store.transaction((tx) => moveHotTransaction(tx, t, "broadcast", { receipt: null }, at));
    t.state = "broadcast";
    moved++;
  }
  if (view.latestNonce > nonce) {
    // The chain used the nonce, but no receipt of ours says so. A node may answer receipts late
    // (its index behind its head, or one backend behind another): the nonce is lost to a foreign
    // transaction only once a final block used it, and that block holds none of ours.
    if (!(await usedByForeign(f, group, view.head))) return moved;
    return moved + (await loseNonce(f, group, at));
  }
  const progress = handlerOf(f, group[0] as HotTransaction).progress;
  for (const t of group) {
    if (t.state === "signed" || t.state === "dropped") {
      await broadcastHotTransaction(f.store, f.chain, t, f.options, progress);
      moved++;
    } else if (t.state === "broadcast" && view.pendingNonce <= nonce) {
      // The node holds nothing at this nonce: it dropped the transaction. The same bytes go again.
      await f.store.transaction((tx) => moveHotTransaction(tx, t, "dropped", {}, at));
      await broadcastHotTransaction(f.store, f.chain, { ...t, state: "dropped" }, f.options, progress);
      moved++;
    }
  }
  const newest = group[group.length - 1];
  if (
    newest &&
    // A transaction the node never took (refused as underpriced, say) is replaced like one it sits on.
    (newest.state === "broadcast" || newest.state === "signed" || newest.state === "dropped") &&
    isOverdue(newest.createdAt, at, f.chain.replaceAfterMs) &&
    group.length < f.options.maxReplacements
  ) {
    moved += await replace(f, newest);
  }
  return moved;
}

/**
 * Whether the transaction that used the group's nonce is a foreign one: the block that used it is
 * final and holds none of the group's hashes. False when the node does not answer (asked again at
 * the next pass). The block is found by bisection on the hot wallet's nonce per block, within the
 * last NONCE_SEARCH_BLOCKS final blocks: a full node (not an archive) keeps the state of those only.
 * A nonce used before them with still no receipt of ours is foreign. At most 9 calls, and only ever
 * for a nonce with no receipt.
 */
/** How far back the search for the block that used a nonce goes: the state a full node keeps (geth: 128 blocks). */
export const NONCE_SEARCH_BLOCKS = 128n;

async function usedByForeign(f: Following, group: HotTransaction[], head: bigint): Promise<boolean> {
  const nonce = group[0]?.nonce ?? 0;
  const { client, hot, confirmations } = f.chain;
  const finalHead = head - BigInt(confirmations) + 1n;
  const final = await client.nonce(hot.address, finalHead);
  if (!final.ok || final.value <= nonce) return false;
  let low = finalHead > NONCE_SEARCH_BLOCKS ? finalHead - NONCE_SEARCH_BLOCKS : 0n;
  const before = await client.nonce(hot.address, low);
  if (!before.ok) return false;
  if (before.value > nonce) return true;
  let high = finalHead;
  while (low < high) {
    const middle = (low + high) / 2n;
    const used = await client.nonce(hot.address, middle);
    if (!used.ok) return false;
    if (used.value > nonce) high = middle;
    else low = middle + 1n;
  }
  const block = await client.block(high, { withTransactions: true });
  if (!block.ok || block.value === null) return false;
  const ours = new Set(group.map((t) => t.hash.toLowerCase()));
  return !block.value.transactions.some((t) => ours.has(t.hash.toLowerCase()));
}

/** The chain used the nonce for no transaction stored here: all of them end replaced, and the purpose decides what its work does. */
async function loseNonce(f: Following, group: HotTransaction[], at: string): Promise<number> {
  const first = group[0] as HotTransaction;
  const lost = await f.store.transaction(async (tx) => {
    let moved = false;
    for (const t of group) {
      if (await moveHotTransaction(tx, t, "replaced", { lastError: "nonce used by a foreign transaction" }, at))
        moved = true;
    }
    if (moved) await handlerOf(f, first).lost(tx, group, at);
    return moved;
  });
  if (lost)
    f.options.log.error(
      { network: f.chain.network, purpose: first.purpose, purposeId: first.purposeId, nonce: first.nonce },
      "hot-wallet nonce used by a foreign transaction",
    );
  return 1;
}

/** Replaces an overdue transaction at its nonce with the same call and higher fees, stored (under the nonce lock, still the newest) before it is broadcast. */
async function replace(f: Following, newest: HotTransaction): Promise<number> {
  const suggested = await suggestedFees(f.chain);
  if (suggested === null) return 0;
  const bumped = bumpFees(newest.fees, suggested, f.chain.maxFeePerGasWei);
  if (!bumped.ok) {
    f.options.log.warn(
      { hash: newest.hash, network: f.chain.network, purpose: newest.purpose },
      "overdue hot-wallet transaction at the fee cap: not replaced",
    );
    return 0;
  }
  const handler = handlerOf(f, newest);
  const signed = await signCall(f.chain, newest.call, newest.nonce, newest.gasLimit, bumped.value);
  const replacement = await f.store.transaction(async (tx) => {
    await lockHotNonce(tx, f.chain.network);
    const atNonce = (
      await openHotTransactions(tx, f.chain.network, f.options.maxInFlight * f.options.maxReplacements)
    ).filter((t) => t.nonce === newest.nonce);
    if (atNonce[atNonce.length - 1]?.id !== newest.id) return null;
    if (handler.mayReplace && !(await handler.mayReplace(tx, newest))) return null;
    const at = f.options.now().toISOString();
    const { id: _id, state: _state, createdAt: _c, ...kept } = newest;
    const stored = await insertHotTransaction(
      tx,
      { ...kept, hash: signed.hash, raw: signed.raw, fees: bumped.value, replacesId: newest.id },
      at,
    );
    await handler.progress?.(tx, stored, "signed", at);
    return stored;
  });
  if (!replacement) return 0;
  f.options.log.info(
    { network: f.chain.network, purpose: newest.purpose, replaced: newest.hash, hash: replacement.hash },
    "hot-wallet transaction not mined in time: replaced with higher fees",
  );
  await broadcastHotTransaction(f.store, f.chain, replacement, f.options, handler.progress);
  return 1;
}
