// A simulated EVM network in memory for the seeded simulation: real EVM execution (ethereumjs), a mempool, mining on demand and rewinds.
import { type Block, createBlock } from "@ethereumjs/block";
import { type Common, createCustomCommon, Hardfork, Mainnet } from "@ethereumjs/common";
import { Caches, MerkleStateManager } from "@ethereumjs/statemanager";
import { createTx, createTxFromRLP, type TypedTransaction } from "@ethereumjs/tx";
import { Account, type Address, bytesToHex, createAddressFromString, hexToBytes } from "@ethereumjs/util";
import { createVM, type RunTxResult, runTx, type VM } from "@ethereumjs/vm";
import {
  concatHex,
  decodeFunctionResult,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  keccak256,
  parseTransaction,
  toHex,
} from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import type {
  CallRequest,
  ChainBlock,
  ChainClient,
  ChainError,
  ChainLog,
  ChainReceipt,
  Hex,
  TransferLog,
} from "../src/domain/chain.ts";
import { assert, err, ok, type Result } from "../src/domain/result.ts";
import { fastKeccak256 } from "./contracts.ts";

export { deployTestToken } from "./contracts.ts";

export interface SimAccount {
  address: Hex;
  privateKey: Hex;
}

export interface MinedTransaction {
  hash: Hex;
  from: Hex;
  to: Hex | null;
  nonce: number;
  blockNumber: bigint;
  status: "success" | "reverted";
}

const GWEI = 1_000_000_000n;
const BLOCK_GAS_LIMIT = 30_000_000n;
// Priority fees go there; base fees are burnt.
const COINBASE = createAddressFromString("0x00000000000000000000000000000000000c0ffe");
const TRANSFER_TOPIC = keccak256(toHex("Transfer(address,address,uint256)"));

/** A transaction the node holds unmined, decoded once. */
interface PendingTransaction {
  hash: Hex;
  tx: TypedTransaction;
  /** Lower case: the key of the sender's queue. */
  sender: string;
  nonce: number;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

interface MinedRecord {
  pending: PendingTransaction;
  from: Hex;
  to: Hex | null;
  value: bigint;
  status: "success" | "reverted";
  gasUsed: bigint;
  effectiveGasPrice: bigint;
  logs: ChainLog[];
  blockNumber: bigint;
  blockHash: Hex;
}

interface SimBlock {
  number: bigint;
  hash: Hex;
  parentHash: Hex;
  timestamp: bigint;
  stateRoot: Uint8Array;
  transactions: MinedRecord[];
  transfers: TransferLog[];
}

const checksummed = new Map<string, Hex>();
/** viem's getAddress costs a keccak: memoised, the same few addresses come back all the time. */
function checksum(address: string): Hex {
  const key = address.toLowerCase();
  let known = checksummed.get(key);
  if (known === undefined) {
    known = getAddress(key);
    checksummed.set(key, known);
  }
  return known;
}

const accounts = new Map<Hex, PrivateKeyAccount>();
function localAccount(privateKey: Hex): PrivateKeyAccount {
  let account = accounts.get(privateKey);
  if (account === undefined) {
    account = privateKeyToAccount(privateKey);
    accounts.set(privateKey, account);
  }
  return account;
}

/** A deterministic account (private key = keccak256 of `label`). */
export function simAccount(label: string): SimAccount {
  const privateKey = keccak256(toHex(label));
  return { address: localAccount(privateKey).address, privateKey };
}

function word(value: bigint): Hex {
  return toHex(value, { size: 32 });
}

function feesOf(tx: TypedTransaction): { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } {
  if ("maxFeePerGas" in tx) return { maxFeePerGas: tx.maxFeePerGas, maxPriorityFeePerGas: tx.maxPriorityFeePerGas };
  return { maxFeePerGas: tx.gasPrice, maxPriorityFeePerGas: tx.gasPrice };
}

/** The hash of a raw transaction (keccak-256 of its bytes), or null when it is not hex. */
function fastHash(raw: Hex): Hex | null {
  return /^0x([0-9a-fA-F]{2})+$/.test(raw) ? keccak256(raw) : null;
}

/** What the sender pays per gas in a block of `baseFee`, and what of it goes to the miner. */
function pricing(pending: PendingTransaction, baseFee: bigint): { price: bigint; tip: bigint } {
  const tip =
    pending.maxFeePerGas - baseFee < pending.maxPriorityFeePerGas
      ? pending.maxFeePerGas - baseFee
      : pending.maxPriorityFeePerGas;
  return { price: baseFee + tip, tip };
}

/** The ERC-20 Transfer logs of a mined transaction whose first log has `firstLogIndex` in its block. */
function transfersOf(record: MinedRecord, firstLogIndex: number): TransferLog[] {
  const transfers: TransferLog[] = [];
  record.logs.forEach((log, i) => {
    const [topic, fromTopic, toTopic] = log.topics;
    // ERC-721's Transfer has a fourth topic (the id) and no data: not an ERC-20 transfer.
    if (topic !== TRANSFER_TOPIC || log.topics.length !== 3 || fromTopic === undefined || toTopic === undefined) return;
    if (log.data.length !== 66) return;
    transfers.push({
      contract: log.address,
      blockNumber: record.blockNumber,
      blockHash: record.blockHash,
      transactionHash: record.pending.hash,
      logIndex: firstLogIndex + i,
      from: checksum(`0x${fromTopic.slice(26)}`),
      to: checksum(`0x${toTopic.slice(26)}`),
      value: BigInt(log.data),
    });
  });
  return transfers;
}

export class SimulatedNetwork {
  readonly chainId: number;
  private readonly common: Common;
  private readonly vm: VM;
  private readonly state: MerkleStateManager;
  private readonly blocks: SimBlock[] = [];
  /** Pending transactions by hash, and per sender by nonce. */
  private readonly pool = new Map<Hex, PendingTransaction>();
  private readonly queues = new Map<string, Map<number, PendingTransaction>>();
  /** Canonical mined transactions by hash. */
  private readonly mined = new Map<Hex, MinedRecord>();
  private baseFeePerGasWei: bigint;
  /** Every rewind bumps it: a height mined again gets another hash even with the same content. */
  private rewinds = 0n;
  /**
   * The state manager is one mutable trie with checkpoints: concurrent callers (the service's workers share the node) would
   * interleave their checkpoints. Every state access runs alone, in call order.
   */
  private turn: Promise<unknown> = Promise.resolve();

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work);
    this.turn = run.catch(() => undefined);
    return run;
  }

  private constructor(options: {
    chainId: number;
    common: Common;
    vm: VM;
    state: MerkleStateManager;
    baseFee: bigint;
  }) {
    this.chainId = options.chainId;
    this.common = options.common;
    this.vm = options.vm;
    this.state = options.state;
    this.baseFeePerGasWei = options.baseFee;
  }

  static async create(options: {
    chainId: number;
    funded: { address: Hex; wei: bigint }[];
    baseFeePerGasWei?: bigint;
  }): Promise<SimulatedNetwork> {
    const common = createCustomCommon({ chainId: options.chainId }, Mainnet, {
      hardfork: Hardfork.Cancun,
      customCrypto: { keccak256: fastKeccak256 },
    });
    // Every transaction and block object copies its Common (merging the parameters of every
    // hardfork: a large share of the time a seed spends in the EVM). This network never changes
    // hardfork and no block sets one, so they all share this one.
    common.copy = () => common;
    const state = new MerkleStateManager({ common, caches: new Caches() });
    const vm = await createVM({ common, stateManager: state });
    for (const { address, wei } of options.funded) {
      await state.putAccount(createAddressFromString(address), new Account(0n, wei));
    }
    const stateRoot = await state.getStateRoot();
    const network = new SimulatedNetwork({
      chainId: options.chainId,
      common,
      vm,
      state,
      baseFee: options.baseFeePerGasWei ?? GWEI,
    });
    const parentHash = word(0n);
    const hash = keccak256(concatHex([word(BigInt(options.chainId)), bytesToHex(stateRoot)]));
    network.blocks.push({ number: 0n, hash, parentHash, timestamp: 0n, stateRoot, transactions: [], transfers: [] });
    return network;
  }

  /** The canonical head's number (genesis = 0). */
  headNumber(): bigint {
    return BigInt(this.blocks.length - 1);
  }

  private head(): SimBlock {
    return this.blocks[this.blocks.length - 1]!;
  }

  setBaseFee(wei: bigint): void {
    assert(wei >= 0n, "a base fee is not negative");
    this.baseFeePerGasWei = wei;
  }

  /** The sender (lower case) of a pending transaction; null when the node does not hold it. */
  pendingSender(hash: Hex): string | null {
    return this.pool.get(hash)?.sender ?? null;
  }

  pendingHashes(): Hex[] {
    return [...this.pool.keys()];
  }

  /** Forgets a pending transaction (a node that dropped it). */
  dropPending(hash: Hex): void {
    const pending = this.pool.get(hash.toLowerCase() as Hex);
    if (pending === undefined) return;
    this.pool.delete(pending.hash);
    const queue = this.queues.get(pending.sender);
    queue?.delete(pending.nonce);
    if (queue?.size === 0) this.queues.delete(pending.sender);
  }

  private addPending(pending: PendingTransaction): void {
    this.pool.set(pending.hash, pending);
    let queue = this.queues.get(pending.sender);
    if (queue === undefined) {
      queue = new Map();
      this.queues.set(pending.sender, queue);
    }
    queue.set(pending.nonce, pending);
  }

  private async account(address: string): Promise<Account> {
    return (await this.state.getAccount(createAddressFromString(address))) ?? new Account();
  }

  /** The nonce of `address` as of block `number`: its transactions mined up to there. */
  private nonceAt(address: string, number: bigint): number {
    const sender = address.toLowerCase();
    let nonce = 0;
    for (const record of this.mined.values()) {
      if (record.from.toLowerCase() === sender && record.blockNumber <= number) nonce++;
    }
    return nonce;
  }

  private async latestNonce(address: string): Promise<number> {
    return Number((await this.account(address)).nonce);
  }

  private async pendingNonce(address: string): Promise<number> {
    const queue = this.queues.get(address.toLowerCase());
    let nonce = await this.latestNonce(address);
    while (queue?.has(nonce)) nonce++;
    return nonce;
  }

  /** Why the node refuses `pending` against the head state, or null (the replacement rule is the caller's). */
  private async refusal(pending: PendingTransaction): Promise<string | null> {
    const { tx } = pending;
    if (tx.gasLimit < tx.getIntrinsicGas()) return "intrinsic gas too low";
    if (tx.gasLimit > BLOCK_GAS_LIMIT) return "exceeds block gas limit";
    const account = await this.account(pending.sender);
    if (pending.nonce < Number(account.nonce)) return "nonce too low";
    if (account.balance < tx.gasLimit * pending.maxFeePerGas + tx.value) {
      return "insufficient funds for gas * price + value";
    }
    return null;
  }

  private decode(raw: Hex): Result<PendingTransaction, ChainError> {
    let tx: TypedTransaction;
    try {
      const chainId = parseTransaction(raw).chainId;
      if (chainId !== undefined && chainId !== this.chainId) return err("node_error", "invalid chain id");
      tx = createTxFromRLP(hexToBytes(raw), { common: this.common });
      const sender = tx.getSenderAddress().toString();
      const hash = bytesToHex(tx.hash());
      return ok({ hash, tx, sender, nonce: Number(tx.nonce), ...feesOf(tx) });
    } catch (error) {
      return err("node_error", `invalid transaction: ${error instanceof Error ? error.message.slice(0, 120) : ""}`);
    }
  }

  /** eth_sendRawTransaction: admits a signed transaction into the mempool (or knows it already). */
  private async admit(raw: Hex): Promise<Result<Hex, ChainError>> {
    // Known before decoding: rebroadcasts are frequent and recovering a sender costs a millisecond.
    const known = fastHash(raw);
    if (known !== null && (this.pool.has(known) || this.mined.has(known))) return ok(known);
    const decoded = this.decode(raw);
    if (!decoded.ok) return decoded;
    const pending = decoded.value;
    const refused = await this.refusal(pending);
    if (refused !== null) return err("node_error", refused);
    const replaced = this.queues.get(pending.sender)?.get(pending.nonce);
    if (replaced !== undefined) {
      // geth's rule: both fee caps must rise by at least 10%.
      const bumped =
        pending.maxFeePerGas * 100n >= replaced.maxFeePerGas * 110n &&
        pending.maxPriorityFeePerGas * 100n >= replaced.maxPriorityFeePerGas * 110n;
      if (!bumped) return err("node_error", "replacement transaction underpriced");
      this.dropPending(replaced.hash);
    }
    this.addPending(pending);
    return ok(pending.hash);
  }

  /** The next transaction to mine: each sender's next nonce, the best effective tip first, then the lower hash. */
  private nextToMine(
    nonces: Map<string, number>,
    options: { exclude: ReadonlySet<Hex>; gasLeft: bigint; baseFee: bigint },
  ): PendingTransaction | null {
    let best: { pending: PendingTransaction; tip: bigint } | null = null;
    for (const [sender, queue] of this.queues) {
      const nonce = nonces.get(sender);
      if (nonce === undefined || nonce < 0) continue;
      const pending = queue.get(nonce);
      if (pending === undefined || options.exclude.has(pending.hash)) continue;
      if (pending.maxFeePerGas < options.baseFee || pending.tx.gasLimit > options.gasLeft) continue;
      const { tip } = pricing(pending, options.baseFee);
      if (best === null || tip > best.tip || (tip === best.tip && pending.hash < best.pending.hash)) {
        best = { pending, tip };
      }
    }
    return best?.pending ?? null;
  }

  private executionBlock(number: bigint, timestamp: bigint, baseFeePerGas: bigint): Block {
    return createBlock(
      { header: { number, timestamp, baseFeePerGas, gasLimit: BLOCK_GAS_LIMIT, coinbase: COINBASE } },
      { common: this.common },
    );
  }

  /**
   * Mines one block at `timestampSeconds` (strictly increasing) holding pending transactions: per sender in nonce order from
   * the sender's current nonce (a gap waits), senders ordered by effective tip then hash; at most `maxTransactions`;
   * `exclude` hashes stay pending. A transaction whose maxFeePerGas < base fee stays pending. Answers the block.
   */
  mine(
    timestampSeconds: bigint,
    options: { maxTransactions?: number; exclude?: ReadonlySet<Hex> } = {},
  ): Promise<ChainBlock> {
    return this.exclusive(() => this.mineNow(timestampSeconds, options));
  }

  private async mineNow(
    timestampSeconds: bigint,
    options: { maxTransactions?: number; exclude?: ReadonlySet<Hex> },
  ): Promise<ChainBlock> {
    const baseFee = this.baseFeePerGasWei;
    const parent = this.head();
    assert(timestampSeconds > parent.timestamp, "block timestamps strictly increase");
    const number = parent.number + 1n;
    const block = this.executionBlock(number, timestampSeconds, baseFee);
    const exclude = new Set([...(options.exclude ?? [])].map((h) => h.toLowerCase() as Hex));
    const nonces = new Map<string, number>();
    for (const sender of this.queues.keys()) nonces.set(sender, await this.latestNonce(sender));
    const executed: { pending: PendingTransaction; result: RunTxResult }[] = [];
    let gasLeft = BLOCK_GAS_LIMIT;
    // One checkpoint for the block: the trie is written once per block, not once per transaction.
    await this.state.checkpoint();
    while (executed.length < (options.maxTransactions ?? Number.POSITIVE_INFINITY)) {
      const pending = this.nextToMine(nonces, { exclude, gasLeft, baseFee });
      if (pending === null) break;
      this.dropPending(pending.hash);
      try {
        const result = await runTx(this.vm, { tx: pending.tx, block, skipHardForkValidation: true });
        executed.push({ pending, result });
        gasLeft -= result.totalGasSpent;
        nonces.set(pending.sender, pending.nonce + 1);
      } catch {
        // No longer payable (its sender spent the funds since): a node drops it; the sender's later nonces wait.
        nonces.set(pending.sender, -1);
      }
    }
    await this.state.commit();
    const stateRoot = await this.state.getStateRoot();
    const hash = keccak256(
      concatHex([
        parent.hash,
        word(number),
        word(timestampSeconds),
        bytesToHex(stateRoot),
        word(this.rewinds),
        ...executed.map((e) => e.pending.hash),
      ]),
    );
    const mined: SimBlock = {
      number,
      hash,
      parentHash: parent.hash,
      timestamp: timestampSeconds,
      stateRoot,
      transactions: [],
      transfers: [],
    };
    for (const { pending, result } of executed) this.record(mined, { pending, result, baseFee });
    this.blocks.push(mined);
    return this.chainBlock(mined, true);
  }

  private record(
    block: SimBlock,
    { pending, result, baseFee }: { pending: PendingTransaction; result: RunTxResult; baseFee: bigint },
  ): void {
    const logs: ChainLog[] = result.receipt.logs.map(([address, topics, data]) => ({
      address: checksum(bytesToHex(address)),
      topics: topics.map((t) => bytesToHex(t)),
      data: bytesToHex(data),
    }));
    const { tx } = pending;
    const record: MinedRecord = {
      pending,
      from: checksum(pending.sender),
      to: tx.to === undefined ? null : checksum(tx.to.toString()),
      value: tx.value,
      status: result.execResult.exceptionError === undefined ? "success" : "reverted",
      gasUsed: result.totalGasSpent,
      effectiveGasPrice: pricing(pending, baseFee).price,
      logs,
      blockNumber: block.number,
      blockHash: block.hash,
    };
    const firstLogIndex = block.transactions.reduce((n, t) => n + t.logs.length, 0);
    block.transfers.push(...transfersOf(record, firstLogIndex));
    block.transactions.push(record);
    this.mined.set(pending.hash, record);
  }

  /**
   * Removes the last `depth` canonical blocks, restoring the state before them; their transactions go back to the mempool
   * (still valid ones only). Answers the hashes put back.
   */
  rewind(depth: number): Promise<Hex[]> {
    return this.exclusive(() => this.rewindNow(depth));
  }

  private async rewindNow(depth: number): Promise<Hex[]> {
    assert(Number.isInteger(depth) && depth >= 0 && BigInt(depth) <= this.headNumber(), "a rewind keeps genesis");
    const removed = this.blocks.splice(this.blocks.length - depth, depth);
    await this.state.setStateRoot(this.head().stateRoot);
    this.rewinds++;
    const putBack: Hex[] = [];
    for (const block of removed) {
      for (const { pending } of block.transactions) {
        this.mined.delete(pending.hash);
        if (this.queues.get(pending.sender)?.has(pending.nonce)) continue;
        if ((await this.refusal(pending)) !== null) continue;
        this.addPending(pending);
        putBack.push(pending.hash);
      }
    }
    return putBack;
  }

  /** Runs a call against the head state plus one block, then forgets its effects. */
  private async simulate(request: { from?: Hex; to: Hex | null; data?: Hex; value?: bigint }, gasLimit: bigint) {
    const from = createAddressFromString(request.from ?? "0x0000000000000000000000000000000000000000");
    const tx = createTx(
      {
        type: 0,
        nonce: (await this.account(from.toString())).nonce,
        gasPrice: 0n,
        gasLimit,
        to: request.to ?? undefined,
        value: request.value ?? 0n,
        data: request.data ?? "0x",
      },
      { common: this.common, freeze: false },
    );
    // An unsigned call "from" anyone, as a node's eth_call and eth_estimateGas run it.
    tx.getSenderAddress = (): Address => from;
    const head = this.head();
    const block = this.executionBlock(head.number + 1n, head.timestamp + 1n, 0n);
    await this.state.checkpoint();
    try {
      return await runTx(this.vm, {
        tx,
        block,
        skipBalance: true,
        skipNonce: true,
        skipHardForkValidation: true,
        skipBlockGasLimitValidation: true,
      });
    } finally {
      await this.state.revert();
    }
  }

  /** eth_call at the head; throws "execution reverted" on a revert. */
  call(to: Hex, data: Hex, from?: Hex): Promise<Hex> {
    return this.exclusive(() => this.callNow(to, data, from));
  }

  private async callNow(to: Hex, data: Hex, from?: Hex): Promise<Hex> {
    const result = await this.simulate({ to, data, ...(from === undefined ? {} : { from }) }, BLOCK_GAS_LIMIT);
    if (result.execResult.exceptionError !== undefined) throw new Error("execution reverted");
    return bytesToHex(result.execResult.returnValue);
  }

  /**
   * Gas enough to succeed: the gas used before refunds when that suffices (21000 for a plain payment, as nodes answer),
   * else plus the 1/64 that calls keep back, raised by a quarter until the call succeeds.
   */
  private async estimate(
    request: CallRequest | { from: Hex; to: Hex | null; data?: Hex; value?: bigint },
  ): Promise<Result<bigint, ChainError>> {
    const first = await this.simulate(request, BLOCK_GAS_LIMIT);
    if (first.execResult.exceptionError !== undefined) return err("node_error", "execution reverted");
    const used = first.totalGasSpent + first.gasRefund;
    if ((await this.simulate(request, used)).execResult.exceptionError === undefined) return ok(used);
    let gas = (used * 64n) / 63n + 1n;
    for (;;) {
      if (gas >= BLOCK_GAS_LIMIT) return ok(BLOCK_GAS_LIMIT);
      const tried = await this.simulate(request, gas);
      if (tried.execResult.exceptionError === undefined) return ok(gas);
      gas = (gas * 5n) / 4n;
    }
  }

  /** Signs (EIP-1559) and submits to the mempool; answers the hash. Throws on a refusal. */
  send(
    from: SimAccount,
    tx: { to: Hex | null; data?: Hex; value?: bigint; gas?: bigint; nonce?: number },
  ): Promise<Hex> {
    return this.exclusive(() => this.sendNow(from, tx));
  }

  private async sendNow(
    from: SimAccount,
    tx: { to: Hex | null; data?: Hex; value?: bigint; gas?: bigint; nonce?: number },
  ): Promise<Hex> {
    const account = localAccount(from.privateKey);
    const nonce = tx.nonce ?? (await this.pendingNonce(account.address));
    let gas = tx.gas;
    if (gas === undefined) {
      const estimated = await this.estimate({ from: account.address, ...tx });
      if (!estimated.ok) throw new Error(`estimateGas: ${estimated.detail ?? estimated.error}`);
      gas = estimated.value;
    }
    const signed = await account.signTransaction({
      type: "eip1559",
      chainId: this.chainId,
      nonce,
      gas,
      maxFeePerGas: 2n * this.baseFeePerGasWei + GWEI,
      maxPriorityFeePerGas: GWEI,
      to: tx.to,
      value: tx.value ?? 0n,
      data: tx.data ?? "0x",
    });
    const sent = await this.admit(signed);
    if (!sent.ok) throw new Error(`sendRawTransaction: ${sent.detail ?? sent.error}`);
    return sent.value;
  }

  /** Every transaction mined on the canonical chain, oldest first. */
  minedTransactions(): MinedTransaction[] {
    return this.blocks.flatMap((b) =>
      b.transactions.map((t) => ({
        hash: t.pending.hash,
        from: t.from,
        to: t.to,
        nonce: t.pending.nonce,
        blockNumber: b.number,
        status: t.status,
      })),
    );
  }

  /** Every ERC-20 Transfer log of the canonical chain (any contract), oldest first. */
  transferLogs(): TransferLog[] {
    return this.blocks.flatMap((b) => b.transfers);
  }

  balance(address: Hex): Promise<bigint> {
    return this.exclusive(async () => (await this.account(address)).balance);
  }

  tokenBalance(token: Hex, holder: Hex): Promise<bigint> {
    return this.exclusive(() => this.tokenBalanceNow(token, holder));
  }

  private async tokenBalanceNow(token: Hex, holder: Hex): Promise<bigint> {
    const data = await this.callNow(
      token,
      encodeFunctionData({ abi: erc20Abi, functionName: "balanceOf", args: [holder] }),
    );
    return decodeFunctionResult({ abi: erc20Abi, functionName: "balanceOf", data });
  }

  private chainBlock(block: SimBlock, withTransactions: boolean): ChainBlock {
    return {
      number: block.number,
      hash: block.hash,
      parentHash: block.parentHash,
      timestamp: block.timestamp,
      transactions: withTransactions
        ? block.transactions.map((t) => ({ hash: t.pending.hash, from: t.from, to: t.to, value: t.value }))
        : [],
    };
  }

  private receiptOf(hash: Hex): ChainReceipt | null {
    const record = this.mined.get(hash.toLowerCase() as Hex);
    if (record === undefined) return null;
    return {
      status: record.status,
      blockNumber: record.blockNumber,
      blockHash: record.blockHash,
      gasUsed: record.gasUsed,
      effectiveGasPrice: record.effectiveGasPrice,
      logs: record.logs.map((l) => ({ ...l, topics: [...l.topics] })),
    };
  }

  private logsOf(contracts: readonly Hex[], fromBlock: bigint, toBlock: bigint): TransferLog[] {
    const wanted = new Set(contracts.map((c) => c.toLowerCase()));
    const last = toBlock < this.headNumber() ? toBlock : this.headNumber();
    const logs: TransferLog[] = [];
    for (let n = fromBlock < 0n ? 0n : fromBlock; n <= last; n++) {
      for (const log of this.blocks[Number(n)]!.transfers) if (wanted.has(log.contract.toLowerCase())) logs.push(log);
    }
    return logs;
  }

  /** The node's view, answering every ChainClient call from memory; a call the node cannot answer is a node_error. */
  client(): ChainClient {
    const answer = async <T>(work: () => Promise<T>): Promise<Result<T, ChainError>> => {
      try {
        return ok(await this.exclusive(work));
      } catch (error) {
        return err("node_error", error instanceof Error ? error.message.slice(0, 200) : String(error));
      }
    };
    return {
      chainId: async () => ok(this.chainId),
      headBlockNumber: async () => ok(this.headNumber()),
      block: (number, options) =>
        answer(async () => {
          const block = number >= 0n && number <= this.headNumber() ? this.blocks[Number(number)]! : null;
          return block === null ? null : this.chainBlock(block, options?.withTransactions ?? true);
        }),
      transferLogs: (contracts, fromBlock, toBlock) => answer(async () => this.logsOf(contracts, fromBlock, toBlock)),
      balance: (address) => answer(async () => (await this.account(address)).balance),
      code: (address) => answer(async () => bytesToHex(await this.state.getCode(createAddressFromString(address)))),
      tokenBalance: (contract, address) => answer(() => this.tokenBalanceNow(contract, address)),
      nonce: (address, blockTag) =>
        answer(async () =>
          typeof blockTag === "bigint"
            ? this.nonceAt(address, blockTag)
            : blockTag === "latest"
              ? this.latestNonce(address)
              : this.pendingNonce(address),
        ),
      fees: async () =>
        ok({
          gasPrice: this.baseFeePerGasWei + GWEI,
          maxFeePerGas: 2n * this.baseFeePerGasWei + GWEI,
          maxPriorityFeePerGas: GWEI,
        }),
      estimateGas: async (request) => {
        const estimated = await answer(() => this.estimate(request));
        return estimated.ok ? estimated.value : estimated;
      },
      call: (request) => answer(() => this.callNow(request.to, request.data ?? "0x", request.from)),
      sendRawTransaction: async (signed) => {
        const admitted = await answer(() => this.admit(signed));
        return admitted.ok ? admitted.value : admitted;
      },
      receipt: (hash) => answer(async () => this.receiptOf(hash)),
    };
  }
}
