// What the service needs from an EVM node (product §12), as the domain sees it: the adapter in src/chain/ implements it over JSON-RPC.
import type { TransactionSerializable } from "viem";
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
  /** The transaction's logs (a flush's outcome is in its factory's); absent from nodes' doubles that do not give them. */
  logs?: readonly ChainLog[];
}

/** One log of a receipt, as emitted. */
export interface ChainLog {
  address: Hex;
  data: Hex;
  topics: Hex[];
  /** Its index in the block, when the node gives it (a payment's key is the transaction and this index). */
  logIndex?: number;
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
  /**
   * Next nonce of `address`: `pending` counts transactions the node holds unmined; a block number
   * answers it as of that block (the nonces its blocks up to there used).
   */
  nonce(address: Hex, blockTag: "latest" | "pending" | bigint): ChainResult<number>;
  fees(): ChainResult<GasFeeQuote>;
  estimateGas(request: CallRequest): ChainResult<bigint>;
  /** eth_call at the latest block: the call's return data (a revert is an error). */
  call(request: CallRequest): ChainResult<Hex>;
  /** Broadcasts a signed transaction; answers its hash. A node that already has it answers the same hash. */
  sendRawTransaction(signed: Hex): ChainResult<Hex>;
  /** Null while the transaction is not mined. */
  receipt(hash: Hex): ChainResult<ChainReceipt | null>;
}

/**
 * Who signs the hot wallet's transactions: a local key (WALLET_MNEMONIC) or a remote signer
 * (SIGNER_URL, chain/remoteSigner.ts). Every hot-wallet signature goes through it: payouts, gas
 * fundings, nonce fills, flushes. A signer that cannot sign (down, slow, or answering something
 * else than what was asked) throws a SignerError: nothing is then stored or broadcast.
 */
export interface Signer {
  readonly address: Hex;
  signTransaction(tx: TransactionSerializable): Promise<Hex>;
}

/**
 * Why a signer did not sign. `signer_unreachable`: no answer (connection refused, DNS);
 * `signer_timeout`: no answer within SIGNER_TIMEOUT_MS; `signer_refused`: a JSON-RPC error;
 * `signer_bad_answer`: an answer that is not a signed transaction (or too large);
 * `signer_wrong_address`: signed by another key; `signer_tampered`: a transaction other than the
 * one asked. Callers sign again later; none of them fails a payout.
 */
export type SignerErrorCode =
  | "signer_unreachable"
  | "signer_timeout"
  | "signer_refused"
  | "signer_bad_answer"
  | "signer_wrong_address"
  | "signer_tampered";

/** A signature that did not happen, with a stable code and a message without the signer's URL. */
export class SignerError extends Error {
  readonly code: SignerErrorCode;
  constructor(code: SignerErrorCode, message: string) {
    super(message);
    this.name = "SignerError";
    this.code = code;
  }
}

/**
 * Whether each network's remote signer signs: what the payout worker asks again and /metrics
 * shows (payments_signer_up). A signer down at start leaves the service serving; its network's
 * payouts wait until it signs again.
 */
export interface SignerStates {
  /** Per network whose signer was asked: true when its last request was signed, with the code of the last failure else. */
  states(): ReadonlyMap<string, { up: boolean; code: SignerErrorCode | null }>;
  /** Probes again the signers of these networks that did not sign their last request (in parallel, each bounded). */
  probeDown(networks: readonly { name: string; chainId: number }[]): Promise<void>;
}

/** The keys of the deposit addresses derived from WALLET_MNEMONIC (m/44'/60'/0'/0/n, n ≥ 1). */
export interface DepositKeys {
  /** The deposit account of index n ≥ 1. */
  key(index: number): HDAccount;
  address(index: number): Hex;
}

/**
 * The wallet. A local one keeps the phrase only in its closures: it is not a property, so
 * logging or serializing the wallet shows no secret.
 */
export interface Wallet {
  /**
   * The hot wallet's signer on a network: pays payouts and gas, receives sweeps. Every network's
   * signs for `hotAddress`; with remote signers a network may have its own (SIGNER_URL_<NETWORK>).
   */
  hot(network: string): Signer;
  readonly hotAddress: Hex;
  /** The remote signers' states (null for the local key, which is always there). */
  readonly signers: SignerStates | null;
  /**
   * The derived deposit keys: null with a remote signer (no phrase in the process). Sweeps of
   * derived addresses then wait; new invoices need forwarder addresses (product §24).
   */
  readonly deposits: DepositKeys | null;
}

/** This process's clients of the configured networks' nodes, one per network and RPC URL (chain/clients.ts). */
export interface ChainClientPool {
  for(network: string, rpcUrl: string): ChainClient;
}
