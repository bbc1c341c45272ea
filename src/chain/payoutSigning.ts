// The EVM payout rail's planner: screens a network's queued payouts, plans what the hot wallet can cover of them (domain/payoutPlan.ts), and hands the plan to the outbox, which signs, stores and broadcasts it.
import { isAddress } from "viem";
import { SignerError } from "../domain/chain.ts";
import type { Promised } from "../domain/hotTransaction.ts";
import {
  type GasEstimate,
  type PayoutPlan,
  type PlannedPayout,
  planPayouts,
  type UnsentPayout,
} from "../domain/payoutPlan.ts";
import { invariantViolation } from "../domain/result.ts";
import type { HotTransaction } from "../store/hotTransactions.ts";
import { settlePayout } from "../store/payouts.ts";
import {
  AWAITING_FUNDS,
  AWAITING_SIGNER,
  lockPayoutState,
  queuedPayoutsOfNetwork,
  reportPayoutProgress,
  takeQueuedPayout,
} from "../store/payoutTransactions.ts";
import type { Store } from "../store/store.ts";
import {
  broadcastHotTransaction,
  crash,
  type HotTxRequest,
  promisedOf,
  storeHotTransactions,
  type WalletNow,
  walletNow,
} from "./outbox.ts";
import { payoutProgress } from "./payoutSettlement.ts";
import { type ChainPayoutOptions, type PayoutChain, payoutCall } from "./payoutTransactions.ts";
import { type CapGate, capQueuedPayouts, claimUnderCap } from "./velocityCapping.ts";

type Queued = Awaited<ReturnType<typeof queuedPayoutsOfNetwork>>[number];

function contractOf(p: Queued): string | null {
  return p.contractAddress?.toLowerCase() ?? null;
}

/**
 * Runs the pure planner, asking the node each fact it needs (a token balance, a gas estimate) and
 * planning again, in the order the planner reaches the payouts: the node is asked what the plan
 * needs and no more. Null when a token balance cannot be read (nothing is signed this batch).
 */
async function planWithNode(
  chain: PayoutChain,
  queued: readonly Queued[],
  committed: Promised,
  wallet: WalletNow,
  options: ChainPayoutOptions,
): Promise<{ plan: Extract<PayoutPlan, { kind: "plan" }>; tokenBalances: Map<string, bigint> } | PayoutPlan> {
  const facts = queued.map((p) => ({
    requestKey: p.requestKey,
    amount: BigInt(p.amount),
    contract: contractOf(p),
    destinationValid: isAddress(p.destination, { strict: false }),
  }));
  const tokenBalances = new Map<string, bigint>();
  const estimates = new Map<string, GasEstimate>();
  const input = {
    queued: facts,
    nativeFree: wallet.balance - committed.native,
    tokensPromised: committed.tokens,
    tokenBalances,
    estimates,
    maxFeePerGas: wallet.fees.maxFeePerGas,
  };
  // Bounded: each round adds one fact, and there are at most two per queued payout.
  for (let round = 0; round <= 2 * queued.length + 1; round++) {
    const plan = planPayouts(input);
    if (plan.kind === "plan") return { plan, tokenBalances };
    if (plan.fact.kind === "tokenBalance") {
      const held = await chain.client.tokenBalance(plan.fact.contract as `0x${string}`, chain.hot.address);
      if (!held.ok) return plan;
      tokenBalances.set(plan.fact.contract, held.value);
      continue;
    }
    const requestKey = plan.fact.requestKey;
    const p = queued.find((q) => q.requestKey === requestKey) as Queued;
    const estimate = await chain.client.estimateGas({
      from: chain.hot.address,
      ...payoutCall(contractOf(p), p.destination, BigInt(p.amount)),
    });
    if (!estimate.ok && !/revert/i.test(estimate.detail ?? ""))
      options.log.warn(
        { network: chain.network, detail: estimate.detail },
        "payouts: gas estimate failed; signing later",
      );
    estimates.set(
      requestKey,
      estimate.ok ? { ok: true, gas: estimate.value } : { ok: false, reverted: /revert/i.test(estimate.detail ?? "") },
    );
  }
  throw invariantViolation("the payout planner asks for each fact once");
}

/** Payouts nothing can be sent for fail at once: their debit is credited back. */
async function settleUnsent(store: Store, unsent: PayoutPlan["unsent"], options: ChainPayoutOptions): Promise<number> {
  for (const { requestKey, status } of unsent) {
    const at = new Date(options.now()).toISOString();
    const report = { outcome: "failed" as const, processorStatus: status, processorTxId: null };
    const settled = await store.transaction((tx) =>
      settlePayout(tx, requestKey, report, at, options.publicBaseUrl, { state: "queued" }),
    );
    if (!settled.ok) options.log.warn({ requestKey, error: settled.error }, "unsent payout settled meanwhile");
    else options.log.warn({ requestKey, status }, "payout failed before anything was signed: debit credited back");
  }
  return unsent.length;
}

/** Shows why queued payouts wait (`awaiting_funds`, `awaiting_signer`) on those not showing it yet; answers how many changed. */
async function showWaiting(
  store: Store,
  waiting: readonly Queued[],
  processorStatus: string,
  options: ChainPayoutOptions,
): Promise<number> {
  const at = new Date(options.now()).toISOString();
  const fresh = waiting.filter((p) => p.processorStatus !== processorStatus);
  if (fresh.length === 0) return 0;
  await store.transaction(async (tx) => {
    for (const p of fresh) await reportPayoutProgress(tx, p.requestKey, { processorStatus }, at);
  });
  return fresh.length;
}

/** The payouts from the first one the wallet cannot cover on show `awaiting_funds` (once each). */
async function markWaiting(store: Store, chain: PayoutChain, waiting: readonly Queued[], options: ChainPayoutOptions) {
  if ((await showWaiting(store, waiting, AWAITING_FUNDS, options)) === 0) return;
  options.log.warn({ network: chain.network, waiting: waiting.length }, "payouts wait for the hot wallet to be funded");
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
  const queued = await queuedPayoutsOfNetwork(store, chain.network, options.batchSize, options.rail);
  if (queued.length === 0) return 0;
  const { cleared, failed } = await screenBeforeSigning(store, queued, options);
  return failed + (await signCleared(store, chain, cleared, options));
}

/**
 * The destinations' screening just before signing (product §21), in the payouts' order. Listed
 * since the payout was accepted: nothing is signed, the payout fails and the merchant is credited
 * back (`destination_screened`). No answer: this payout and those behind it wait, since payouts
 * leave in the order they were accepted.
 */
async function screenBeforeSigning(
  store: Store,
  queued: readonly Queued[],
  options: ChainPayoutOptions,
): Promise<{ cleared: Queued[]; failed: number }> {
  const screen = options.screenDestination;
  if (screen === undefined) return { cleared: [...queued], failed: 0 };
  const cleared: Queued[] = [];
  const listed: UnsentPayout[] = [];
  for (const p of queued) {
    const verdict = await screen(p.destination);
    if (verdict === "pending") break;
    if (verdict === "listed") listed.push({ requestKey: p.requestKey, status: "destination_screened" });
    else cleared.push(p);
  }
  return { cleared, failed: await settleUnsent(store, listed, options) };
}

/** Signs and broadcasts what the hot wallet can cover of the screened queued payouts (signQueuedPayouts), through the outbox. */
async function signCleared(
  store: Store,
  chain: PayoutChain,
  cleared: readonly Queued[],
  options: ChainPayoutOptions,
): Promise<number> {
  if (cleared.length === 0) return 0;
  const { within: queued, gate } = await capQueuedPayouts(store, chain.network, cleared, options);
  if (queued.length === 0) return 0;
  const promised = await promisedOf(store, chain.network);
  if (promised.nonces >= options.maxInFlight) return 0;
  const wallet = await walletNow(chain);
  if (wallet === null) {
    options.log.warn({ network: chain.network }, "payouts: the node did not answer; signing later");
    return 0;
  }
  const planned = await planWithNode(chain, queued, promised, wallet, options);
  if (!("plan" in planned)) return settleUnsent(store, planned.unsent, options);
  const { plan, tokenBalances } = planned;
  const moved = await settleUnsent(store, plan.unsent, options);
  if (plan.waitingFrom !== null) await markWaiting(store, chain, queued.slice(plan.waitingFrom), options);
  if (plan.planned.length === 0) return moved;
  const byKey = new Map(queued.map((p) => [p.requestKey, p]));
  const at = options.now().toISOString();
  let signed: HotTransaction[];
  try {
    const requests = plan.planned.map((p) => payoutRequest(p, byKey.get(p.requestKey) as Queued, { at, gate }));
    signed = await storeHotTransactions(store, chain, requests, {
      wallet,
      tokenBalances,
      reserve: "payout",
      at,
      log: options.log,
    });
  } catch (error) {
    // A signer that did not sign (down, slow, another key or transaction): nothing is stored (a
    // signature under the lock rolls its transaction back, so no nonce is taken) or broadcast;
    // the payouts stay queued.
    if (!(error instanceof SignerError)) throw error;
    options.log.warn(
      { network: chain.network, code: error.code, reason: error.message },
      "payouts: the signer did not sign; signing later",
    );
    // The payouts show why they wait (`awaiting_signer`), as they show a short hot wallet.
    await showWaiting(
      store,
      plan.planned.map((p) => byKey.get(p.requestKey) as Queued),
      AWAITING_SIGNER,
      options,
    );
    return moved;
  }
  crash("after_sign", options);
  for (const t of signed) await broadcastHotTransaction(store, chain, t, options, payoutProgress);
  return moved + signed.length;
}

/**
 * One planned payout as the outbox's request: taken (queued -> sent) in the transaction that stores
 * it, if the velocity cap still lets it go under the nonce lock.
 */
function payoutRequest(plan: PlannedPayout, queued: Queued, batch: { at: string; gate: CapGate }): HotTxRequest {
  const { at, gate } = batch;
  return {
    purpose: "payout",
    purposeId: plan.requestKey,
    call: payoutCall(plan.contract, queued.destination, plan.amount),
    gas: plan.gas,
    tokens: plan.contract === null ? null : { contract: plan.contract, amount: plan.amount },
    claim: async (tx) =>
      (await lockPayoutState(tx, plan.requestKey)) === "queued" && (await claimUnderCap(tx, gate, plan.requestKey, at)),
    stored: async (tx, t) => {
      const taken = await takeQueuedPayout(tx, plan.requestKey, t.hash, at);
      if (!taken) throw invariantViolation(`payout ${plan.requestKey} locked queued but not taken`);
    },
  };
}
