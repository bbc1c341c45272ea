// What the service needs from an EVM node (product §12), as the domain sees it: the adapter in src/chain/ implements it over JSON-RPC.
import type { HDAccount } from "viem/accounts";
import type { Result } from "./result.ts";

/**
 * Why a node call failed. `node_unreachable`: no answer (connection refused, DNS); `node_timeout`:
 * no answer within the bound; `node_error`: an answer that is an error or not what JSON-RPC
 * promises. Callers never credit, sweep or send on any of them: they try again later.
 */
export type ChainError = "node_unreachable" | "node_timeout" | "node_error";

export type ChainResult<T> = Promise<Result<T, ChainError>>;

export type Hex = `0x${string}`;

export interface ChainTransaction {
  hash: Hex;
  from: Hex;
  /** Null for a contract creation. */
  to: Hex | null;
  /** Wei. */
  value: bigint;
}

export interface ChainBlock {
  number: bigint;
  hash: Hex;
  parentHash: Hex;
  /** Seconds since the epoch. */
  timestamp: bigint;
  transactions: ChainTransaction[];
}

/** An ERC-20 `Transfer(from, to, value)` event. */
export interface TransferLog {
  /** The token contract (checksummed). */
  contract: Hex;
  blockNumber: bigint;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: number;
  from: Hex;
  to: Hex;
  /** Token minor units. */
  value: bigint;
}

export interface ChainReceipt {
  status: "success" | "reverted";
  blockNumber: bigint;
  blockHash: Hex;
  gasUsed: bigint;
  /** Wei per gas actually paid. */
  effectiveGasPrice: bigint;
}

/** What a node asks for gas now (not the invoice fee estimate of `fees.ts`). */
export interface GasFeeQuote {
  /** Legacy gas price (wei per gas): what a node asks now. */
  gasPrice: bigint;
  /** EIP-1559 fields, when the chain has a base fee. */
  maxFeePerGas: bigint | null;
  maxPriorityFeePerGas: bigint | null;
}

export interface CallRequest {
  from: Hex;
  to: Hex;
  value?: bigint;
  data?: Hex;
}

/** One node of one network. Every call is bounded in time and answers errors as values. */
export interface ChainClient {
  chainId(): ChainResult<number>;
  headBlockNumber(): ChainResult<bigint>;
  /**
   * The block with its transactions; null when the node has no block at that height yet. With
   * `withTransactions: false` only the header is read (transactions answered empty): a fraction of
   * the bytes, for a scanner that has no native-coin payment to look for.
   */
  block(number: bigint, options?: { withTransactions?: boolean }): ChainResult<ChainBlock | null>;
  /** Transfer logs of `contracts` in [fromBlock, toBlock] (the caller bounds the range). */
  transferLogs(contracts: readonly Hex[], fromBlock: bigint, toBlock: bigint): ChainResult<TransferLog[]>;
  /** Native balance in wei at the latest block. */
  balance(address: Hex): ChainResult<bigint>;
  /** The code at `address` at the latest block ("0x": none, e.g. an account or an undeployed forwarder). */
  code(address: Hex): ChainResult<Hex>;
  /** ERC-20 balanceOf at the latest block. */
  tokenBalance(contract: Hex, address: Hex): ChainResult<bigint>;
  /** Next nonce of `address`: `pending` counts transactions the node holds unmined. */
  nonce(address: Hex, blockTag: "latest" | "pending"): ChainResult<number>;
  fees(): ChainResult<GasFeeQuote>;
  estimateGas(request: CallRequest): ChainResult<bigint>;
  /** Broadcasts a signed transaction; answers its hash. A node that already has it answers the same hash. */
  sendRawTransaction(signed: Hex): ChainResult<Hex>;
  /** Null while the transaction is not mined. */
  receipt(hash: Hex): ChainResult<ChainReceipt | null>;
}

/**
 * Keys of the wallet. The phrase lives only in this object's closure: it is not a property, so
 * logging or serializing the wallet shows no secret.
 */
export interface Wallet {
  /** The hot wallet: pays payouts and gas, receives sweeps. */
  hot(): HDAccount;
  /** The deposit account of index n ≥ 1. */
  deposit(index: number): HDAccount;
  depositAddress(index: number): Hex;
  readonly hotAddress: Hex;
}

/** This process's clients of the configured networks' nodes, one per network and RPC URL (chain/clients.ts). */
export interface ChainClientPool {
  for(network: string, rpcUrl: string): ChainClient;
}
