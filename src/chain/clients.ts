// One ChainClient per configured node in a process, rebuilt when the operator changes a network's RPC URL.
import type { ChainClient } from "../domain/chain.ts";
import { rpcChainClient } from "./rpc.ts";

export type ChainClientFactory = (rpcUrl: string) => ChainClient;

export class ChainClients {
  readonly #factory: ChainClientFactory;
  readonly #clients = new Map<string, { rpcUrl: string; client: ChainClient }>();

  constructor(factory: ChainClientFactory = (rpcUrl) => rpcChainClient(rpcUrl)) {
    this.#factory = factory;
  }

  /** The client of `network` at `rpcUrl` (the store holds the URL; this keeps one client per URL). */
  for(network: string, rpcUrl: string): ChainClient {
    const known = this.#clients.get(network);
    if (known && known.rpcUrl === rpcUrl) return known.client;
    const client = this.#factory(rpcUrl);
    this.#clients.set(network, { rpcUrl, client });
    return client;
  }
}
