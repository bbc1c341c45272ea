// What the EVM payout rail's steps share: the chains it pays out on, its options and crash points, and signing, storing and broadcasting one payout transaction.
import type { FastifyBaseLogger } from "fastify";
import { encodeFunctionData, erc20Abi, keccak256, parseTransaction } from "viem";
import type { ChainClient, Hex, Signer } from "../domain/chain.ts";
import type { Fees } from "../domain/payoutTransaction.ts";
import {
  moveTransaction,
  type NewPayoutTransaction,
  type PayoutTransaction,
  reportPayoutProgress,
} from "../store/payoutTransactions.ts";
import type { Store } from "../store/store.ts";
import type { CrashPoint } from "./crashPoints.ts";

/** One network the hot wallet pays out on, as the worker needs it. */
export interface PayoutChain {
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

export type { CrashPoint } from "./crashPoints.ts";

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
  /** Where a test process kills itself (the composition root reads PAYOUT_TEST_CRASH_AT); null in production. */
  crashAt?: CrashPoint | null;
  /** Screening of a destination just before its payout is signed (product §21); none: not screened here. */
  screenDestination?: (address: string) => Promise<"clear" | "listed" | "pending">;
  /** The rail whose queued payouts are signed: the EVM rail's worker always sets it; absent, any queued payout of the network (tests). */
  rail?: "evm";
}

export const CHAIN_PAYOUT_DEFAULTS = { batchSize: 20, maxInFlight: 64, maxReplacements: 8 } as const;

export function crash(point: CrashPoint, options: ChainPayoutOptions): void {
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

export async function sign(
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
export async function suggestedFees(chain: PayoutChain): Promise<Fees | null> {
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
export const MAX_FUNDINGS_RESERVED = 500;

/**
 * Native coin and tokens the hot wallet has already promised to transactions not yet mined: payout
 * transactions and the gas fundings of sweeps (`fundings`, their signed bytes).
 */
export function committedFunds(open: readonly PayoutTransaction[], fundings: readonly string[] = []) {
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

export function storedView(id: string, row: NewPayoutTransaction, now: string): PayoutTransaction {
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

/** Sends the stored raw transaction (again): the node answers the same hash for one it already holds. */
export async function broadcast(store: Store, chain: PayoutChain, t: PayoutTransaction, options: ChainPayoutOptions) {
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
