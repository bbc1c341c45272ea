// The JSON-RPC adapter of ChainClient over viem: one client per node, every call bounded in time, every failure a value.
import {
  BlockNotFoundError,
  createPublicClient,
  erc20Abi,
  getAddress,
  http,
  keccak256,
  type PublicClient,
  parseAbiItem,
  TransactionReceiptNotFoundError,
} from "viem";
import type {
  CallRequest,
  ChainBlock,
  ChainClient,
  ChainError,
  ChainReceipt,
  ChainResult,
  GasFeeQuote,
  Hex,
  TransferLog,
} from "../domain/chain.ts";
import { err, ok, type Result } from "../domain/result.ts";

/** Bound of one JSON-RPC call: a node slower than this is treated as down for this call. */
export const RPC_TIMEOUT_MS = 10_000;

const TRANSFER_EVENT = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

/** What a failed call was, without the URL (it may hold a provider key) or the request body. */
export function chainErrorOf(error: unknown): { error: ChainError; detail: string } {
  const name = error instanceof Error ? error.name : "";
  const chain = [] as string[];
  let cursor: unknown = error;
  for (let depth = 0; depth < 5 && cursor instanceof Error; depth++) {
    chain.push(cursor.name);
    cursor = (cursor as { cause?: unknown }).cause;
  }
  const short =
    error instanceof Error && "shortMessage" in error ? String((error as { shortMessage: unknown }).shortMessage) : "";
  // viem's messages may quote the URL: keep the first line of the short message, minus any URL.
  const detail =
    short
      .split("\n")[0]
      ?.replace(/https?:\/\/\S+/g, "<rpc url>")
      .slice(0, 200) || name;
  if (chain.includes("TimeoutError")) return { error: "node_timeout", detail: "the node did not answer in time" };
  if (name === "HttpRequestError" && !/status/i.test(short)) return { error: "node_unreachable", detail };
  return { error: "node_error", detail };
}

async function attempt<T>(work: () => Promise<T>): Promise<Result<T, ChainError>> {
  try {
    return ok(await work());
  } catch (error) {
    const { error: code, detail } = chainErrorOf(error);
    return err(code, detail);
  }
}

export interface RpcOptions {
  timeoutMs?: number;
}

/** A block by number: its header alone, or with its transactions' senders, recipients and values; null when the node has none. */
async function readBlock(
  client: PublicClient,
  number: bigint,
  withTransactions: boolean,
): ChainResult<ChainBlock | null> {
  try {
    if (!withTransactions) {
      const h = await client.getBlock({ blockNumber: number, includeTransactions: false });
      if (h.hash === null || h.number === null) return ok(null);
      return ok({ number: h.number, hash: h.hash, parentHash: h.parentHash, timestamp: h.timestamp, transactions: [] });
    }
    const b = await client.getBlock({ blockNumber: number, includeTransactions: true });
    if (b.hash === null || b.number === null) return ok(null);
    return ok({
      number: b.number,
      hash: b.hash,
      parentHash: b.parentHash,
      timestamp: b.timestamp,
      // Nodes answer lowercase addresses: checksum them, as logs are.
      transactions: b.transactions.map((t) => ({
        hash: t.hash,
        from: getAddress(t.from),
        to: t.to ? getAddress(t.to) : null,
        value: t.value,
      })),
    });
  } catch (error) {
    if (error instanceof BlockNotFoundError) return ok(null);
    const { error: code, detail } = chainErrorOf(error);
    return err(code, detail);
  }
}

/** ERC-20 Transfer logs of `contracts` in a block range (eth_getLogs filtered by contract). */
function readTransferLogs(
  client: PublicClient,
  contracts: readonly string[],
  fromBlock: bigint,
  toBlock: bigint,
): ChainResult<TransferLog[]> {
  return attempt(async () => {
    if (contracts.length === 0) return [];
    const logs = await client.getLogs({
      address: [...contracts] as Hex[],
      event: TRANSFER_EVENT,
      fromBlock,
      toBlock,
      // Logs that do not decode as an ERC-20 Transfer (e.g. ERC-721's, with an indexed id) are left out.
      strict: true,
    });
    const transfers: TransferLog[] = [];
    for (const log of logs) {
      if (log.blockHash === null || log.transactionHash === null || log.logIndex === null) continue;
      if (log.blockNumber === null) continue;
      transfers.push({
        contract: log.address,
        blockNumber: log.blockNumber,
        blockHash: log.blockHash,
        transactionHash: log.transactionHash,
        logIndex: log.logIndex,
        from: log.args.from,
        to: log.args.to,
        value: log.args.value,
      });
    }
    return transfers;
  });
}

/** A ChainClient talking to `rpcUrl`. No retries here: the workers retry on their own schedule. */
// longer than 70 lines: one object of the ChainClient's methods, each a short JSON-RPC call that shares
// the client and the error mapping above it.
export function rpcChainClient(rpcUrl: string, options: RpcOptions = {}): ChainClient {
  const client: PublicClient = createPublicClient({
    // Calls made together (the scanner's block reads) go out as one JSON-RPC batch, at most 50 calls.
    transport: http(rpcUrl, { timeout: options.timeoutMs ?? RPC_TIMEOUT_MS, retryCount: 0, batch: { batchSize: 50 } }),
  });
  return {
    chainId: () => attempt(() => client.getChainId()),
    headBlockNumber: () => attempt(() => client.getBlockNumber({ cacheTime: 0 })),
    block: (number, options = {}) => readBlock(client, number, options.withTransactions !== false),
    transferLogs: (contracts, fromBlock, toBlock) => readTransferLogs(client, contracts, fromBlock, toBlock),
    balance: (address) => attempt(() => client.getBalance({ address })),
    code: (address) => attempt(async () => (await client.getCode({ address })) ?? "0x"),
    tokenBalance: (contract, address) =>
      attempt(() =>
        client.readContract({ address: contract, abi: erc20Abi, functionName: "balanceOf", args: [address] }),
      ),
    nonce: (address, blockTag) =>
      attempt(() =>
        client.getTransactionCount(
          typeof blockTag === "bigint" ? { address, blockNumber: blockTag } : { address, blockTag },
        ),
      ),
    fees: (): ChainResult<GasFeeQuote> =>
      attempt(async () => {
        const gasPrice = await client.getGasPrice();
        const block = await client.getBlock({ blockTag: "latest" });
        if (block.baseFeePerGas === null || block.baseFeePerGas === undefined) {
          return { gasPrice, maxFeePerGas: null, maxPriorityFeePerGas: null };
        }
        const priority = gasPrice > block.baseFeePerGas ? gasPrice - block.baseFeePerGas : 1_000_000_000n;
        return { gasPrice, maxFeePerGas: block.baseFeePerGas * 2n + priority, maxPriorityFeePerGas: priority };
      }),
    estimateGas: (request: CallRequest) =>
      attempt(() =>
        client.estimateGas({
          account: request.from,
          to: request.to,
          ...(request.value === undefined ? {} : { value: request.value }),
          ...(request.data === undefined ? {} : { data: request.data }),
        }),
      ),
    call: (request: CallRequest) =>
      attempt(async () => {
        const answer = await client.call({
          account: request.from,
          to: request.to,
          ...(request.value === undefined ? {} : { value: request.value }),
          ...(request.data === undefined ? {} : { data: request.data }),
        });
        return answer.data ?? "0x";
      }),
    sendRawTransaction: async (signed): ChainResult<Hex> => {
      try {
        return ok(await client.sendRawTransaction({ serializedTransaction: signed }));
      } catch (error) {
        // Broadcasting again what the node already holds (a retry after a crash) is not a failure.
        const text =
          error instanceof Error ? `${error.message} ${String((error as { details?: unknown }).details)}` : "";
        if (/already known|known transaction|already imported/i.test(text)) return ok(keccak256(signed));
        const { error: code, detail } = chainErrorOf(error);
        return err(code, detail);
      }
    },
    receipt: async (hash): ChainResult<ChainReceipt | null> => {
      try {
        const r = await client.getTransactionReceipt({ hash });
        return ok({
          status: r.status,
          blockNumber: r.blockNumber,
          blockHash: r.blockHash,
          gasUsed: r.gasUsed,
          effectiveGasPrice: r.effectiveGasPrice,
          logs: r.logs.map((l) => ({ address: l.address, data: l.data, topics: [...l.topics], logIndex: l.logIndex })),
        });
      } catch (error) {
        if (error instanceof TransactionReceiptNotFoundError) return ok(null);
        const { error: code, detail } = chainErrorOf(error);
        return err(code, detail);
      }
    },
  };
}
