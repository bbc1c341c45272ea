// The hot wallet's one outbox (product §26), signing side: every purpose's transactions are signed here before the nonce lock, checked against what the wallet has already promised under it, stored with their nonce, and only then broadcast.
import { keccak_256 } from "@noble/hashes/sha3.js";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils.js";
import type { ChainClient, Hex, Signer } from "../domain/chain.ts";
import {
  type Commitment,
  type Fees,
  type HotTxPurpose,
  initialFees,
  type Promised,
  promisedFunds,
  queuedClaims,
} from "../domain/hotTransaction.ts";
import {
  type HotCall,
  type HotTransaction,
  insertHotTransaction,
  lockHotNonce,
  moveHotTransaction,
  openHotTransactions,
} from "../store/hotTransactions.ts";
import { type Network, peekHotNonce, takeHotNonce } from "../store/networks.ts";
import { capInWei, findPayoutSettings, queuedPayoutsOfNetwork } from "../store/payoutTransactions.ts";
import type { Store, Tx } from "../store/store.ts";
import type { CrashPoint } from "./crashPoints.ts";

/** One network the hot wallet signs on, as the outbox needs it. */
export interface HotChain {
  network: string;
  chainId: number;
  confirmations: number;
  client: ChainClient;
  /** The hot wallet's signer (a local key or a remote signer). */
  hot: Signer;
  /** Ticker of the network's native coin in the catalog (its gas is ledgered in it); null when none. */
  nativeCurrency: string | null;
  /** The operator's cap on maxFeePerGas, in wei. */
  maxFeePerGasWei: bigint;
  /** How long a transaction may stay unmined before it is replaced with higher fees. */
  replaceAfterMs: number;
}

/** Where the outbox writes what it did (pino's logger fits). */
export interface OutboxLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/**
 * The one info line of a hot-wallet transaction at each stage (stored, broadcast, mined, settled):
 * what an operator follows money by. Ids, network, nonce, hash and amounts; never a key, a raw
 * transaction or a node's URL.
 */
export function logHotTransaction(log: OutboxLog, stage: string, t: HotTransaction, extra: object = {}): void {
  log.info(
    {
      hot: stage,
      network: t.network,
      purpose: t.purpose,
      purposeId: t.purposeId,
      nonce: t.nonce,
      hash: t.hash,
      value: t.call.value.toString(),
      ...(t.tokenContract === null ? {} : { token: t.tokenContract, tokenAmount: t.tokenAmount.toString() }),
      ...extra,
    },
    `hot-wallet transaction ${stage}`,
  );
}

/** One network as the outbox signs on it: its node, the hot wallet's signer, and the operator's fee cap and replacement delay. */
export async function hotChainOf(
  store: Store,
  hot: Signer,
  n: Network,
  client: ChainClient,
  native: string | null,
): Promise<HotChain> {
  const settings = await findPayoutSettings(store, n.name);
  return {
    network: n.name,
    chainId: n.chainId,
    confirmations: n.confirmations,
    client,
    hot,
    nativeCurrency: native,
    maxFeePerGasWei: capInWei(settings.maxFeePerGasGwei),
    replaceAfterMs: settings.replaceAfterSeconds * 1000,
  };
}

/** What every outbox step takes: its one clock, its log, where a test kills it, and its bounds. */
export interface OutboxOptions {
  now: () => Date;
  log: OutboxLog;
  /** Where a test process kills itself (injected by the composition root); null in production. */
  crashAt?: CrashPoint | null;
  /** Bound on the nonces of one network in flight: nothing more is signed past it. */
  maxInFlight: number;
  /** Bound on the transactions one nonce may have (the first and its replacements). */
  maxReplacements: number;
  /**
   * The head the caller's pass already read (the scanner's, src/chain/passReads.ts): following
   * does not ask the node again. Absent or null: asked. A head read earlier in the pass is behind
   * the chain, never ahead: a transaction counts as deep and a nonce as used only later, never wrongly.
   */
  head?: bigint | null;
}

export const OUTBOX_DEFAULTS = { maxInFlight: 64, maxReplacements: 8 } as const;

export function crash(point: CrashPoint, options: Pick<OutboxOptions, "crashAt">): void {
  if (options.crashAt === point) process.kill(process.pid, "SIGKILL");
}

/** One transaction a purpose asks the outbox to send. */
export interface HotTxRequest {
  purpose: HotTxPurpose;
  purposeId: string;
  call: HotCall;
  gas: bigint;
  /** Tokens it carries out of the hot wallet (a payout's). */
  tokens: { contract: string; amount: bigint } | null;
  /**
   * In the storing database transaction, once its funds are free and before its nonce is taken:
   * whether the purpose's work is still to do (its row locked). False: skipped, nothing stored.
   */
  claim?: (tx: Tx) => Promise<boolean>;
  /** In the same transaction, once its row is stored: the purpose takes its work (a compare-and-set that must hold). */
  stored?: (tx: Tx, t: HotTransaction) => Promise<void>;
}

/** What the node says of the hot wallet before signing: its coin, its next nonce, and the fees to sign with. */
export interface WalletNow {
  balance: bigint;
  pendingNonce: number;
  fees: Fees;
}

/** What the node suggests, as EIP-1559 fees (a chain without a base fee: its gas price for both). */
export async function suggestedFees(chain: HotChain): Promise<Fees | null> {
  const fees = await chain.client.fees();
  if (!fees.ok) return null;
  const { gasPrice, maxFeePerGas, maxPriorityFeePerGas } = fees.value;
  return { maxFeePerGas: maxFeePerGas ?? gasPrice, maxPriorityFeePerGas: maxPriorityFeePerGas ?? gasPrice };
}

/** The hot wallet's balance, next nonce and fees within the operator's cap; null when the node does not answer. */
export async function walletNow(chain: HotChain): Promise<WalletNow | null> {
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

/** Bound on the open transactions read to know what is promised: every nonce in flight and its replacements. */
const PROMISES_READ = OUTBOX_DEFAULTS.maxInFlight * OUTBOX_DEFAULTS.maxReplacements;

function commitmentOf(t: HotTransaction): Commitment {
  return { ...t, valueWei: t.call.value };
}

/**
 * Everything the hot wallet of `network` has promised: the open transactions of every purpose
 * (per nonce, the dearest), read in the caller's database transaction (under the nonce lock when
 * it signs).
 */
export async function promisedOf(tx: Tx, network: string): Promise<Promised> {
  const open = await openHotTransactions(tx, network, PROMISES_READ);
  return promisedFunds(open.map(commitmentOf));
}

/** Coin and tokens free for a new transaction: the balances less what is promised, and (for any purpose but payouts) less what queued payouts hold back. */
export async function freeFunds(
  tx: Tx,
  chain: HotChain,
  wallet: WalletNow,
  tokenBalances: ReadonlyMap<string, bigint>,
  holdForQueued: boolean,
): Promise<{ native: bigint; tokens: Map<string, bigint>; nonces: number }> {
  const promised = await promisedOf(tx, chain.network);
  const native = wallet.balance - promised.native;
  const tokens = new Map([...tokenBalances].map(([c, held]) => [c, held - (promised.tokens.get(c) ?? 0n)]));
  if (!holdForQueued) return { native, tokens, nonces: promised.nonces };
  const queued = await queuedPayoutsOfNetwork(tx, chain.network, OUTBOX_DEFAULTS.maxInFlight);
  const claims = queuedClaims(
    queued.map((q) => ({ tokenContract: q.contractAddress?.toLowerCase() ?? null, amount: BigInt(q.amount) })),
    { native, tokens },
    wallet.fees.maxFeePerGas,
  );
  for (const [c, amount] of claims.tokens) tokens.set(c, (tokens.get(c) ?? 0n) - amount);
  return { native: native - claims.native, tokens, nonces: promised.nonces };
}

/** Bound on the token contracts read for the queued payouts' claims (a network has a few). */
const CLAIM_CONTRACTS_READ = 16;

/**
 * The hot wallet's balances of the tokens queued payouts carry, read from the node before any lock:
 * what those payouts can claim (queuedClaims) depends on them. Null when the node does not answer.
 */
export async function queuedTokenBalances(store: Store, chain: HotChain): Promise<Map<string, bigint> | null> {
  const queued = await queuedPayoutsOfNetwork(store, chain.network, OUTBOX_DEFAULTS.maxInFlight);
  const contracts = [...new Set(queued.flatMap((q) => (q.contractAddress ? [q.contractAddress.toLowerCase()] : [])))];
  const balances = new Map<string, bigint>();
  for (const contract of contracts.slice(0, CLAIM_CONTRACTS_READ)) {
    const held = await chain.client.tokenBalance(contract as Hex, chain.hot.address);
    if (!held.ok) return null;
    balances.set(contract, held.value);
  }
  return balances;
}

export async function signCall(chain: HotChain, call: HotCall, nonce: number, gas: bigint, fees: Fees) {
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
  // @noble/hashes rather than viem, which this module (loaded by every process) must not load.
  return { raw, hash: `0x${bytesToHex(keccak_256(hexToBytes(raw.slice(2))))}` as Hex };
}

/** How a submission is checked against the wallet's funds. */
export interface Submission {
  wallet: WalletNow;
  /** Token balances the hot wallet holds, read by the caller for the requests' tokens. */
  tokenBalances?: ReadonlyMap<string, bigint>;
  /**
   * `payout`: the requests are the queued payouts themselves, checked against what is promised.
   * `other`: checked also against what queued payouts hold back (a flush, a deployment, a funding).
   * `fill`: not checked: a nonce gap holds every promised transaction behind it.
   */
  reserve: "payout" | "other" | "fill";
  /** A fixed nonce (a fill's): taken as is, not from the counter. */
  nonces?: readonly number[];
  /** When they are stored (the caller's one clock). */
  at: string;
  /** Where each stored transaction is logged (one info line each). */
  log?: OutboxLog;
}

/**
 * Signs the requests before the nonce lock (a slow remote signer then holds no lock), then in one
 * database transaction: the lock, what is promised read again, and for each request in order
 * while the wallet can cover it, its claim, its nonce and its row (signed again when its nonce
 * came out otherwise). Answers what was stored; nothing is broadcast before it commits.
 */
export async function storeHotTransactions(
  store: Store,
  chain: HotChain,
  requests: readonly HotTxRequest[],
  submission: Submission,
): Promise<HotTransaction[]> {
  if (requests.length === 0) return [];
  const { wallet } = submission;
  const first = await peekHotNonce(store, chain.network, chain.hot.address, wallet.pendingNonce);
  const presigned: { nonce: number; raw: Hex; hash: Hex }[] = [];
  for (const [i, r] of requests.entries()) {
    const nonce = submission.nonces?.[i] ?? first + i;
    presigned.push({ nonce, ...(await signCall(chain, r.call, nonce, r.gas, wallet.fees)) });
  }
  return store
    .transaction(async (tx) => {
      await lockHotNonce(tx, chain.network);
      const free = await freeFunds(
        tx,
        chain,
        wallet,
        submission.tokenBalances ?? new Map(),
        submission.reserve === "other",
      );
      const stored: HotTransaction[] = [];
      for (const [i, r] of requests.entries()) {
        const cost = r.call.value + r.gas * wallet.fees.maxFeePerGas;
        const tokensFree = r.tokens === null ? null : (free.tokens.get(r.tokens.contract) ?? 0n);
        const covered = free.native >= cost && (r.tokens === null || (tokensFree ?? 0n) >= r.tokens.amount);
        if (submission.reserve !== "fill" && !covered) break;
        const early = presigned[i] as { nonce: number; raw: Hex; hash: Hex };
        if (r.claim && !(await r.claim(tx))) continue;
        const nonce =
          submission.nonces?.[i] ?? (await takeHotNonce(tx, chain.network, chain.hot.address, wallet.pendingNonce));
        free.native -= cost;
        if (r.tokens !== null) free.tokens.set(r.tokens.contract, (tokensFree ?? 0n) - r.tokens.amount);
        const signed = early.nonce === nonce ? early : await signCall(chain, r.call, nonce, r.gas, wallet.fees);
        const row = await storeOne(tx, chain, r, { nonce, ...signed, fees: wallet.fees }, submission.at);
        await r.stored?.(tx, row);
        stored.push(row);
      }
      return stored;
    })
    .then((stored) => {
      // After the commit: a line for a transaction that was rolled back would be a lie.
      if (submission.log) for (const t of stored) logHotTransaction(submission.log, "stored", t);
      return stored;
    });
}

async function storeOne(
  tx: Tx,
  chain: HotChain,
  r: HotTxRequest,
  signed: { nonce: number; raw: Hex; hash: Hex; fees: Fees },
  at: string,
): Promise<HotTransaction> {
  return insertHotTransaction(
    tx,
    {
      purpose: r.purpose,
      purposeId: r.purposeId,
      network: chain.network,
      chainId: chain.chainId,
      fromAddress: chain.hot.address,
      nonce: signed.nonce,
      hash: signed.hash,
      raw: signed.raw,
      call: r.call,
      tokenContract: r.tokens?.contract ?? null,
      tokenAmount: r.tokens?.amount ?? 0n,
      gasLimit: r.gas,
      fees: signed.fees,
      replacesId: null,
    },
    at,
  );
}

/** What a purpose hears of its transaction on its way (a payout shows it as its processor status). */
export type HotTxProgress = "signed" | "broadcast" | "mined";

/** Sends the stored raw transaction (again): the node answers the same hash for one it already holds. */
export async function broadcastHotTransaction(
  store: Store,
  chain: HotChain,
  t: HotTransaction,
  options: Pick<OutboxOptions, "now" | "log" | "crashAt">,
  onProgress?: (tx: Tx, t: HotTransaction, progress: HotTxProgress, at: string) => Promise<void>,
): Promise<boolean> {
  const sent = await chain.client.sendRawTransaction(t.raw as Hex);
  const now = options.now().toISOString();
  if (!sent.ok) {
    options.log.warn(
      { network: chain.network, purpose: t.purpose, nonce: t.nonce, hash: t.hash, detail: sent.detail },
      "hot-wallet transaction broadcast failed: sent again later",
    );
    await store.transaction((tx) => moveHotTransaction(tx, t, t.state, { lastError: sent.detail ?? sent.error }, now));
    return false;
  }
  crash("after_broadcast", options);
  await store.transaction(async (tx) => {
    if ((await moveHotTransaction(tx, t, "broadcast", { broadcastAt: now, lastError: null }, now)) && onProgress)
      await onProgress(tx, t, "broadcast", now);
  });
  logHotTransaction(options.log, "broadcast", t);
  return true;
}
