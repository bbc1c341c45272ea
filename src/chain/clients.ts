// One ChainClient per configured node in a process, rebuilt when the operator changes a network's RPC URL.
import type { ChainClient, ChainClientPool } from "../domain/chain.ts";

export type ChainClientFactory = (rpcUrl: string) => ChainClient;

/**
 * The JSON-RPC client of `rpcUrl`, its module (viem) loaded at the first call: a sandbox process,
 * which never calls a node, does not pay the 16 MiB viem costs.
 */
export function lazyRpcClient(rpcUrl: string): ChainClient {
  let loaded: Promise<ChainClient> | null = null;
  const client = () => {
    loaded ??= import("./rpc.ts").then((m) => m.rpcChainClient(rpcUrl));
    return loaded;
  };
  return {
    chainId: async () => (await client()).chainId(),
    headBlockNumber: async () => (await client()).headBlockNumber(),
    block: async (number, options) => (await client()).block(number, options),
    transferLogs: async (contracts, fromBlock, toBlock) => (await client()).transferLogs(contracts, fromBlock, toBlock),
    balance: async (address) => (await client()).balance(address),
    code: async (address) => (await client()).code(address),
    tokenBalance: async (contract, address) => (await client()).tokenBalance(contract, address),
    nonce: async (address, blockTag) => (await client()).nonce(address, blockTag),
    fees: async () => (await client()).fees(),
    estimateGas: async (request) => (await client()).estimateGas(request),
    call: async (request) => (await client()).call(request),
    sendRawTransaction: async (signed) => (await client()).sendRawTransaction(signed),
    receipt: async (hash) => (await client()).receipt(hash),
  };
}

export class ChainClients implements ChainClientPool {
  readonly #factory: ChainClientFactory;
  readonly #clients = new Map<string, { rpcUrl: string; client: ChainClient }>();

  constructor(factory: ChainClientFactory = lazyRpcClient) {
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
