// The hot wallet's gas on each network as the operator sees it (GET /admin/v1/networks, /metrics): the node's balance and fees, the outbox's promises, each node call bounded.

import type { ChainClient, ChainClientPool, Hex } from "../domain/chain.ts";
import { type GasRunway, gasRunway } from "../domain/gasRunway.ts";
import { initialFees } from "../domain/hotTransaction.ts";
import { listNetworks } from "../store/networks.ts";
import { capInWei, findPayoutSettings } from "../store/payoutTransactions.ts";
import type { SecretBox } from "../store/secrets.ts";
import type { Store } from "../store/store.ts";
import { promisedOf } from "./outbox.ts";

/** Bound of each node call of a runway read: a dead node does not hold a view or a scrape long. */
export const GAS_READ_TIMEOUT_MS = 2000;

/** Bound on the networks a scrape reads the runway of (each one node call pair; a service has a few). */
export const GAS_NETWORKS_READ = 32;

function bounded<T>(work: Promise<T>, timeoutMs: number): Promise<T | null> {
  return Promise.race([
    work.catch(() => null),
    new Promise<null>((resolve) => setTimeout(() => resolve(null), timeoutMs).unref()),
  ]);
}

/**
 * The runway of the hot wallet `hot` on `network`: its balance and the fees it would sign with now
 * (the node's, within the network's cap), less what the outbox promised. Null when the node does
 * not answer in time.
 */
export async function readGasRunway(
  store: Store,
  network: string,
  client: ChainClient,
  hot: Hex,
  timeoutMs = GAS_READ_TIMEOUT_MS,
): Promise<GasRunway | null> {
  const [balance, fees, settings, promised] = await Promise.all([
    bounded(client.balance(hot), timeoutMs),
    bounded(client.fees(), timeoutMs),
    findPayoutSettings(store, network),
    promisedOf(store, network),
  ]);
  if (balance === null || !balance.ok || fees === null || !fees.ok) return null;
  const { gasPrice, maxFeePerGas, maxPriorityFeePerGas } = fees.value;
  const suggested = { maxFeePerGas: maxFeePerGas ?? gasPrice, maxPriorityFeePerGas: maxPriorityFeePerGas ?? gasPrice };
  const signing = initialFees(suggested, capInWei(settings.maxFeePerGasGwei));
  return gasRunway(balance.value, promised.native, signing.maxFeePerGas);
}

/** The runway of every configured network whose node answered (at most GAS_NETWORKS_READ, read at once); none without a hot wallet. */
export async function gasRunways(ports: {
  store: Store;
  box: SecretBox;
  hot: Hex | null;
  chains: ChainClientPool;
}): Promise<{ network: string; runway: GasRunway }[]> {
  const { store, box, hot, chains } = ports;
  if (hot === null) return [];
  const networks = await listNetworks(store, box, GAS_NETWORKS_READ);
  const read = await Promise.all(
    networks.map(async (n) => ({
      network: n.name,
      runway: await readGasRunway(store, n.name, chains.for(n.name, n.rpcUrl), hot),
    })),
  );
  return read.flatMap((r) => (r.runway === null ? [] : [{ network: r.network, runway: r.runway }]));
}
