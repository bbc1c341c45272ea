// Operator API, live payouts: what the chain says about a payout's stored transactions, and whether an operator's outcome agrees with it.

import type { ServiceContext } from "../../app/context.ts";
import type { ChainClient, Hex } from "../../domain/chain.ts";
import { confirmationsOf } from "../../domain/hotTransaction.ts";
import type { HotTransaction } from "../../store/hotTransactions.ts";
import { findNetwork } from "../../store/networks.ts";
import { Problem } from "../problem.ts";

/** Bound of each node call an operator request makes. */
const CHAIN_CHECK_TIMEOUT_MS = 5000;

export interface OnChainState {
  receipt: "success" | "reverted" | null;
  blockNumber: string | null;
  confirmations: string | null;
}

export interface ChainView {
  network: string;
  /** The hot wallet's nonce the latest block counts: a nonce below it is used, by something. */
  latestNonce: number | null;
  nodeError: string | null;
  transactions: Map<string, OnChainState>;
}

function bounded<T>(work: Promise<T>, fallback: T): Promise<T> {
  return Promise.race([
    work,
    new Promise<T>((resolve) => setTimeout(() => resolve(fallback), CHAIN_CHECK_TIMEOUT_MS).unref()),
  ]);
}

/** Asks the network's node about each stored transaction of a payout; failures are reported, not thrown. */
export async function chainView(ctx: ServiceContext, txs: readonly HotTransaction[]): Promise<ChainView | null> {
  const first = txs[0];
  if (!first) return null;
  const network = await findNetwork(ctx.store, ctx.box, first.network);
  if (!network)
    return { network: first.network, latestNonce: null, nodeError: "network_not_configured", transactions: new Map() };
  const client: ChainClient = ctx.chains.for(network.name, network.rpcUrl);
  const timeout = { ok: false as const, error: "node_timeout" as const, detail: "the node did not answer in time" };
  const [head, nonce] = await Promise.all([
    bounded(client.headBlockNumber(), timeout),
    bounded(client.nonce(first.fromAddress as Hex, "latest"), timeout),
  ]);
  if (!head.ok || !nonce.ok) {
    const failed = !head.ok ? head : nonce.ok ? null : nonce;
    return {
      network: network.name,
      latestNonce: null,
      nodeError: failed ? `${failed.error}: ${failed.detail ?? ""}`.trim() : "node_error",
      transactions: new Map(),
    };
  }
  const transactions = new Map<string, OnChainState>();
  for (const t of txs) {
    const receipt = await bounded(client.receipt(t.hash as Hex), timeout);
    if (!receipt.ok) {
      return { network: network.name, latestNonce: nonce.value, nodeError: `${receipt.error}`, transactions };
    }
    const r = receipt.value;
    transactions.set(t.hash, {
      receipt: r?.status ?? null,
      blockNumber: r ? r.blockNumber.toString() : null,
      confirmations: r ? confirmationsOf(r.blockNumber, head.value).toString() : null,
    });
  }
  return { network: network.name, latestNonce: nonce.value, nodeError: null, transactions };
}

/**
 * Checks an operator's outcome for a payout with stored transactions against the chain: `failed`
 * only when none of them succeeded and none can still be mined (their nonce is used); `completed`
 * only when one of them succeeded (its hash is the payout's transaction id). Answers that hash.
 */
export async function checkOutcomeAgainstChain(
  ctx: ServiceContext,
  txs: readonly HotTransaction[],
  status: "completed" | "failed",
  txId: string | undefined,
): Promise<string | null> {
  if (txs.length === 0) return txId ?? null;
  const view = await chainView(ctx, txs);
  if (!view || view.nodeError !== null || view.latestNonce === null) {
    throw new Problem(
      "chain_unavailable",
      "The network's node did not answer: the outcome cannot be checked. Retry later.",
    );
  }
  const succeeded = txs.find((t) => view.transactions.get(t.hash)?.receipt === "success");
  const nonce = txs[0]?.nonce ?? 0;
  const mined = txs.some((t) => (view.transactions.get(t.hash)?.receipt ?? null) !== null);
  // Without a receipt and with its nonce still free, a stored transaction can still be mined.
  const stillPending = !mined && view.latestNonce <= nonce;
  if (status === "failed") {
    if (succeeded) {
      throw new Problem(
        "payout_outcome_contradicts_chain",
        `Transaction ${succeeded.hash} of this payout was mined successfully: the payout cannot be failed.`,
      );
    }
    if (stillPending) throw pending(nonce);
    return txId ?? null;
  }
  if (succeeded) {
    if (txId !== undefined && txId.toLowerCase() !== succeeded.hash) {
      throw new Problem(
        "payout_outcome_contradicts_chain",
        `The payout's transaction on chain is ${succeeded.hash}, not ${txId}.`,
      );
    }
    return succeeded.hash;
  }
  if (stillPending) throw pending(nonce);
  // None of the service's transactions paid it and none can: only a transfer made otherwise can have.
  if (txId === undefined) {
    throw new Problem(
      "payout_outcome_contradicts_chain",
      "No transaction of this payout was mined successfully: to record it completed, name the transaction that paid it (txId).",
    );
  }
  return txId;
}

function pending(nonce: number): Problem {
  return new Problem(
    "payout_transaction_pending",
    `Nonce ${nonce} of the hot wallet is not used yet: a transaction of this payout can still be mined.`,
  );
}
