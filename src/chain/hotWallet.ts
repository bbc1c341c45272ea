// The hot wallet's outbox as the use cases' port (product §26): the networks it signs on, built from the store, and submit/follow for one network; the composition root builds it, nothing under src/app sees the chain code.

import type { ChainClientPool, Wallet } from "../domain/chain.ts";
import { SignerError } from "../domain/chain.ts";
import type { HotTxSubmission, HotWalletOutbox, OutboxRefusal } from "../domain/hotTransaction.ts";
import { err, ok, type Result } from "../domain/result.ts";
import { listCurrencies } from "../store/currencies.ts";
import { openHotTransactions } from "../store/hotTransactions.ts";
import { listNetworks, type Network } from "../store/networks.ts";
import type { SecretBox } from "../store/secrets.ts";
import type { Store } from "../store/store.ts";
import {
  broadcastHotTransaction,
  type HotChain,
  hotChainOf,
  OUTBOX_DEFAULTS,
  type OutboxLog,
  type OutboxOptions,
  queuedTokenBalances,
  storeHotTransactions,
  walletNow,
} from "./outbox.ts";
import { followHotTransactions } from "./outboxFollowing.ts";
import type { SettleChainPayment } from "./scanner.ts";

/** What the hot wallet's chains are built from. */
export interface HotWalletPorts {
  readonly store: Store;
  readonly box: SecretBox;
  readonly wallet: Wallet | null;
  readonly chains: ChainClientPool;
}

async function hotChain(ports: HotWalletPorts, n: Network, native: string | null): Promise<HotChain | null> {
  if (ports.wallet === null) return null;
  return hotChainOf(ports.store, ports.wallet.hot(n.name), n, ports.chains.for(n.name, n.rpcUrl), native);
}

/** Every configured network the hot wallet signs on (none without a wallet). */
export async function hotChainsOf(ports: HotWalletPorts): Promise<HotChain[]> {
  if (ports.wallet === null) return [];
  const [networks, currencies] = await Promise.all([listNetworks(ports.store, ports.box), listCurrencies(ports.store)]);
  const chains: HotChain[] = [];
  for (const n of networks) {
    const native = currencies.find((c) => c.network === n.name && c.contractAddress === null)?.ticker ?? null;
    const chain = await hotChain(ports, n, native);
    if (chain) chains.push(chain);
  }
  return chains;
}

/** The port: one transaction submitted through the outbox (at most one in flight per work), and a follow of one network. */
export function hotWalletOutbox(
  ports: HotWalletPorts,
  options: { now: () => Date; log: OutboxLog; publicBaseUrl: string; settlePayment?: SettleChainPayment },
): HotWalletOutbox {
  const outboxOptions = { ...OUTBOX_DEFAULTS, now: options.now, log: options.log };
  const chainOf = async (network: string) => (await hotChainsOf(ports)).find((c) => c.network === network) ?? null;
  return {
    async submit(network, request): Promise<Result<{ hash: `0x${string}`; nonce: number }, OutboxRefusal>> {
      if (ports.wallet === null) return err("no_wallet");
      const chain = await chainOf(network);
      if (chain === null) return err("network_not_found");
      return submitOne(ports.store, chain, request, outboxOptions);
    },
    async follow(network) {
      const chain = await chainOf(network);
      if (chain === null) return;
      // The settle handlers (and viem, which they use) load at the first follow: only live mode follows.
      const { batchHandlers } = await import("./payouts.ts");
      const handlers = batchHandlers(chain, options);
      await followHotTransactions(ports.store, chain, handlers, outboxOptions);
    },
  };
}

async function submitOne(
  store: Store,
  chain: HotChain,
  request: HotTxSubmission,
  options: OutboxOptions,
): Promise<Result<{ hash: `0x${string}`; nonce: number }, OutboxRefusal>> {
  const [wallet, tokenBalances] = await Promise.all([walletNow(chain), queuedTokenBalances(store, chain)]);
  if (wallet === null || tokenBalances === null) return err("node_unavailable");
  const sameWork = async (tx: Parameters<typeof openHotTransactions>[0]) =>
    (await openHotTransactions(tx, chain.network, options.maxInFlight * options.maxReplacements)).some(
      (t) => t.purpose === request.purpose && t.purposeId === request.purposeId,
    );
  let inFlight = false;
  try {
    const at = options.now().toISOString();
    const claim = async (tx: Parameters<typeof sameWork>[0]) => {
      inFlight = await sameWork(tx);
      return !inFlight;
    };
    const submission = { wallet, tokenBalances, reserve: "other" as const, at, log: options.log };
    const stored = await storeHotTransactions(store, chain, [{ ...request, claim }], submission);
    const t = stored[0];
    if (t === undefined) return err(inFlight ? "in_flight" : "funds_promised");
    await broadcastHotTransaction(store, chain, t, options);
    return ok({ hash: t.hash as `0x${string}`, nonce: t.nonce });
  } catch (error) {
    if (error instanceof SignerError) return err("signer_unavailable");
    throw error;
  }
}
