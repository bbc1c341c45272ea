// The EVM payout rail, signing: plans what the hot wallet can cover of a network's queued payouts (domain/payoutPlan.ts), signs it through the hot wallet's Signer before the nonce lock, stores it under the lock (signing again there a payout whose nonce came out otherwise), then broadcasts it.
import { isAddress } from "viem";
import { type Hex, SignerError } from "../domain/chain.ts";
import {
  type GasEstimate,
  type PayoutPlan,
  type PlannedPayout,
  planPayouts,
  type UnsentPayout,
} from "../domain/payoutPlan.ts";
import { type Fees, initialFees } from "../domain/payoutTransaction.ts";
import { invariantViolation } from "../domain/result.ts";
import { openFlushTransactions } from "../store/flushes.ts";
import { peekHotNonce, takeHotNonce } from "../store/networks.ts";
import { settlePayout } from "../store/payouts.ts";
import {
  AWAITING_FUNDS,
  insertPayoutTransaction,
  lockHotNonce,
  lockPayoutState,
  openPayoutTransactions,
  type PayoutTransaction,
  queuedPayoutsOfNetwork,
  reportPayoutProgress,
  takeQueuedPayout,
} from "../store/payoutTransactions.ts";
import type { Store, Tx } from "../store/store.ts";
import { openFundings } from "../store/sweeps.ts";
import {
  broadcast,
  type ChainPayoutOptions,
  committedFunds,
  crash,
  MAX_FUNDINGS_RESERVED,
  type PayoutChain,
  payoutCall,
  sign,
  storedView,
  suggestedFees,
} from "./payoutTransactions.ts";

type Queued = Awaited<ReturnType<typeof queuedPayoutsOfNetwork>>[number];

/** What the node says of the hot wallet before a plan: its balance, next nonce and the fees to sign with. */
interface WalletNow {
  balance: bigint;
  pendingNonce: number;
  fees: Fees;
}

async function walletNow(chain: PayoutChain): Promise<WalletNow | null> {
  const hot = chain.hot.address;
  const [balance, pendingNonce, suggested] = await Promise.all([
    chain.client.balance(hot),
    chain.client.nonce(hot, "pending"),
    suggestedFees(chain),
  ]);
  if (!balance.ok || !pendingNonce.ok || suggested === null) return null;
  return {
    balance: balance.value,
    pendingNonce: pendingNonce.value,
    fees: initialFees(suggested, chain.maxFeePerGasWei),
  };
}

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
  committed: ReturnType<typeof committedFunds>,
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

/** The payouts from the first one the wallet cannot cover on show `awaiting_funds` (once each). */
async function markWaiting(store: Store, chain: PayoutChain, waiting: readonly Queued[], options: ChainPayoutOptions) {
  const at = new Date(options.now()).toISOString();
  const fresh = waiting.filter((p) => p.processorStatus !== AWAITING_FUNDS);
  if (fresh.length === 0) return;
  await store.transaction(async (tx) => {
    for (const p of fresh) await reportPayoutProgress(tx, p.requestKey, { processorStatus: AWAITING_FUNDS }, at);
  });
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

/** Sweeps' gas fundings and flushes (product §24) signed and not yet mined: the hot wallet's coin they may spend is not the payouts'. */
async function promisedGas(tx: Tx, network: string): Promise<string[]> {
  return [
    ...(await openFundings(tx, network, MAX_FUNDINGS_RESERVED)),
    ...(await openFlushTransactions(tx, network, MAX_FUNDINGS_RESERVED)),
  ];
}

/** Signs and broadcasts what the hot wallet can cover of the screened queued payouts (signQueuedPayouts). */
async function signCleared(
  store: Store,
  chain: PayoutChain,
  queued: readonly Queued[],
  options: ChainPayoutOptions,
): Promise<number> {
  if (queued.length === 0) return 0;
  const open = await openPayoutTransactions(store, chain.network, options.maxInFlight * options.maxReplacements);
  const committed = committedFunds(open, await promisedGas(store, chain.network));
  if (committed.nonces >= options.maxInFlight) return 0;
  const wallet = await walletNow(chain);
  if (wallet === null) {
    options.log.warn({ network: chain.network }, "payouts: the node did not answer; signing later");
    return 0;
  }
  const planned = await planWithNode(chain, queued, committed, wallet, options);
  if (!("plan" in planned)) return settleUnsent(store, planned.unsent, options);
  const { plan, tokenBalances } = planned;
  const moved = await settleUnsent(store, plan.unsent, options);
  if (plan.waitingFrom !== null) await markWaiting(store, chain, queued.slice(plan.waitingFrom), options);
  if (plan.planned.length === 0) return moved;
  const byKey = new Map(queued.map((p) => [p.requestKey, p]));
  let signed: PayoutTransaction[];
  try {
    const presigned = await presign(store, chain, plan.planned, byKey, wallet);
    signed = await store.transaction((tx) =>
      signPlanned(tx, chain, plan.planned, { byKey, presigned }, tokenBalances, wallet, options),
    );
  } catch (error) {
    // A signer that did not sign (down, slow, another key or transaction): nothing is stored (a
    // signature under the lock rolls its transaction back, so no nonce is taken) or broadcast;
    // the payouts stay queued.
    if (!(error instanceof SignerError)) throw error;
    options.log.warn(
      { network: chain.network, code: error.code, reason: error.message },
      "payouts: the signer did not sign; signing later",
    );
    return moved;
  }
  crash("after_sign", options);
  for (const t of signed) await broadcast(store, chain, t, options);
  return moved + signed.length;
}

/** Transactions signed before the nonce lock, by payout request key, with the nonce each was signed at. */
type Presigned = ReadonlyMap<string, { nonce: number; raw: Hex; hash: Hex }>;

/**
 * Signs the planned payouts outside any database transaction, at the nonces they will most likely
 * take: a slow or hanging signer (a remote one waits up to SIGNER_TIMEOUT_MS) then holds no lock
 * (the network's row on PostgreSQL, the one writer on SQLite). A payout whose nonce comes out
 * otherwise under the lock (another process signed meanwhile, a payout skipped) is signed again
 * there; a signature not stored is never broadcast.
 */
async function presign(
  store: Store,
  chain: PayoutChain,
  planned: readonly PlannedPayout[],
  byKey: ReadonlyMap<string, Queued>,
  wallet: WalletNow,
): Promise<Presigned> {
  const first = await peekHotNonce(store, chain.network, chain.hot.address, wallet.pendingNonce);
  const signed = new Map<string, { nonce: number; raw: Hex; hash: Hex }>();
  for (const [i, plan] of planned.entries()) {
    const call = payoutCall(plan.contract, (byKey.get(plan.requestKey) as Queued).destination, plan.amount);
    signed.set(plan.requestKey, { nonce: first + i, ...(await sign(chain, call, first + i, plan.gas, wallet.fees)) });
  }
  return signed;
}

/**
 * One transaction: each payout's nonce taken (the network row locked), its transaction signed and
 * stored, the payout taken. Nothing is broadcast before it commits; a crash before that leaves
 * the payouts queued and no nonce used.
 */
async function signPlanned(
  tx: Tx,
  chain: PayoutChain,
  planned: readonly PlannedPayout[],
  { byKey, presigned }: { byKey: ReadonlyMap<string, Queued>; presigned: Presigned },
  tokenHeld: ReadonlyMap<string, bigint>,
  wallet: WalletNow,
  options: ChainPayoutOptions,
): Promise<PayoutTransaction[]> {
  const now = new Date(options.now()).toISOString();
  await lockHotNonce(tx, chain.network);
  // Another process may have signed since the plan was made: what the wallet has promised is read
  // again under the lock, and a plan it no longer covers waits for the next batch.
  const promised = committedFunds(
    await openPayoutTransactions(tx, chain.network, options.maxInFlight * options.maxReplacements),
    await promisedGas(tx, chain.network),
  );
  let nativeFree = wallet.balance - promised.native;
  const tokenFree = new Map([...tokenHeld].map(([c, held]) => [c, held - (promised.tokens.get(c) ?? 0n)]));
  const stored: PayoutTransaction[] = [];
  for (const plan of planned) {
    const tokensFree = plan.contract === null ? null : (tokenFree.get(plan.contract) ?? 0n);
    if (nativeFree < plan.cost || (tokensFree !== null && tokensFree < plan.amount)) break;
    if ((await lockPayoutState(tx, plan.requestKey)) !== "queued") continue;
    const nonce = await takeHotNonce(tx, chain.network, chain.hot.address, wallet.pendingNonce);
    nativeFree -= plan.cost;
    if (plan.contract !== null && tokensFree !== null) tokenFree.set(plan.contract, tokensFree - plan.amount);
    const early = presigned.get(plan.requestKey);
    const ready = early?.nonce === nonce ? early : null;
    stored.push(
      await storeSigned(tx, chain, plan, byKey.get(plan.requestKey) as Queued, nonce, wallet.fees, now, ready),
    );
  }
  return stored;
}

async function storeSigned(
  tx: Tx,
  chain: PayoutChain,
  plan: PlannedPayout,
  queued: Queued,
  nonce: number,
  fees: Fees,
  now: string,
  presigned: { raw: Hex; hash: Hex } | null,
): Promise<PayoutTransaction> {
  const call = payoutCall(plan.contract, queued.destination, plan.amount);
  const { raw, hash } = presigned ?? (await sign(chain, call, nonce, plan.gas, fees));
  const row = {
    payoutRequestKey: plan.requestKey,
    network: chain.network,
    chainId: chain.chainId,
    fromAddress: chain.hot.address,
    nonce,
    hash,
    raw,
    toAddress: call.to,
    assetContract: plan.contract,
    recipient: queued.destination,
    amount: plan.amount,
    valueWei: call.value,
    gasLimit: plan.gas,
    fees,
    replacesId: null,
  };
  const id = await insertPayoutTransaction(tx, row, now);
  const taken = await takeQueuedPayout(tx, plan.requestKey, hash, now);
  if (!taken) throw invariantViolation(`payout ${plan.requestKey} locked queued but not taken`);
  return storedView(id, row, now);
}
