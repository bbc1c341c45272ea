// The forwarder factory on a node (product §24): its idempotent deployment through the deterministic proxy, and batch flushes signed by a given account.
import {
  decodeEventLog,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type PublicClient,
  type TransactionSerializableEIP1559,
} from "viem";
import type { ChainError, Hex } from "../domain/chain.ts";
import { FORWARDER_FACTORY_ABI, FORWARDER_FACTORY_V1_ABI } from "../domain/forwarderContracts.generated.ts";
import {
  type Address,
  CURRENT_FACTORY_VERSION,
  checkFlushBatch,
  DEPLOYMENT_PROXY,
  FACTORY_DEPLOY_SALT,
  type FactoryVersion,
  type FlushItem,
  factoryAddress,
  factoryInitCode,
  forwarderAddress,
} from "../domain/forwarders.ts";
import { err, ok, type Result } from "../domain/result.ts";
import { chainErrorOf } from "./rpc.ts";

/** What signs: a local key (viem's local accounts) or, later, a remote signer behind the same method. */
export interface TransactionSigner {
  readonly address: Address;
  signTransaction(transaction: TransactionSerializableEIP1559): Promise<Hex>;
}

/** How long a deployment or a flush may take to be mined before the caller is told it is still pending. */
export const RECEIPT_TIMEOUT_MS = 60_000;
/** Gas headroom over the node's estimate: a flush's cost can move between estimate and inclusion. */
const GAS_HEADROOM_PERCENT = 120n;

export type ForwarderError = ChainError | "no_deployment_proxy" | "deploy_failed" | "bad_batch";

async function attempt<T>(work: () => Promise<T>): Promise<Result<T, ForwarderError>> {
  try {
    return ok(await work());
  } catch (error) {
    const { error: code, detail } = chainErrorOf(error);
    return err(code, detail);
  }
}

/** The factory of `owner` on this node: its address (the same everywhere) and whether it has code here. */
export async function factoryStatus(
  client: PublicClient,
  owner: Address,
  version: FactoryVersion = CURRENT_FACTORY_VERSION,
): Promise<Result<{ address: Address; deployed: boolean }, ForwarderError>> {
  const address = factoryAddress(owner, version);
  return attempt(async () => {
    const code = await client.getCode({ address });
    return { address, deployed: code !== undefined && code !== "0x" };
  });
}

/** An EIP-1559 transaction from `signer` to `to`, its nonce, fees and gas asked of the node, signed and broadcast. */
async function signAndSend(client: PublicClient, signer: TransactionSigner, to: Address, data: Hex): Promise<Hex> {
  const [chainId, nonce, fees, estimate] = await Promise.all([
    client.getChainId(),
    client.getTransactionCount({ address: signer.address, blockTag: "pending" }),
    client.estimateFeesPerGas(),
    client.estimateGas({ account: signer.address, to, data }),
  ]);
  const signed = await signer.signTransaction({
    type: "eip1559",
    chainId,
    nonce,
    to,
    data,
    value: 0n,
    gas: (estimate * GAS_HEADROOM_PERCENT) / 100n,
    maxFeePerGas: fees.maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
  });
  return client.sendRawTransaction({ serializedTransaction: signed });
}

/**
 * Deploys the factory of `owner` (by default the signer) through the deterministic proxy, unless it
 * is there already: calling it twice, or on a network where someone else deployed it, sends nothing.
 * Anyone may pay for the deployment; the owner is in the init code, so it is the same factory.
 */
export async function deployFactory(options: {
  client: PublicClient;
  signer: TransactionSigner;
  owner?: Address;
  /** The factory version (default the current); an earlier one only for tools and tests of the addresses it handed out. */
  version?: FactoryVersion;
}): Promise<Result<{ address: Address; transactionHash: Hex | null }, ForwarderError>> {
  const { client, signer } = options;
  const owner = options.owner ?? signer.address;
  const version = options.version ?? CURRENT_FACTORY_VERSION;
  const status = await factoryStatus(client, owner, version);
  if (!status.ok) return status;
  if (status.value.deployed) return ok({ address: status.value.address, transactionHash: null });
  const address = status.value.address;
  const proxy = await attempt(() => client.getCode({ address: DEPLOYMENT_PROXY }));
  if (!proxy.ok) return proxy;
  if (proxy.value === undefined || proxy.value === "0x") {
    return err("no_deployment_proxy", `no deterministic deployment proxy at ${DEPLOYMENT_PROXY} on this network`);
  }
  const data = `${FACTORY_DEPLOY_SALT}${factoryInitCode(owner, version).slice(2)}` as Hex;
  const sent = await attempt(async () => {
    const hash = await signAndSend(client, signer, getAddress(DEPLOYMENT_PROXY), data);
    const receipt = await client.waitForTransactionReceipt({ hash, timeout: RECEIPT_TIMEOUT_MS });
    return { hash, status: receipt.status };
  });
  if (!sent.ok) return sent;
  const after = await factoryStatus(client, owner, version);
  if (!after.ok) return after;
  if (sent.value.status !== "success" || !after.value.deployed) {
    return err("deploy_failed", `the deployment ${sent.value.hash} left no code at ${address}`);
  }
  return ok({ address, transactionHash: sent.value.hash });
}

/**
 * The flush call data of a batch for the factory `version` (null token: the native coin only):
 * version 1's flush(ids, tokens); version 2's flush(ids, tokens, tokenOf, fresh): each token once,
 * item i's as the index tokenOf[i], and bit i of fresh set when items[i] is fresh (no code yet:
 * deployed without the 2600-gas look).
 */
export function flushCalldata(
  items: readonly FlushItem[],
  version: FactoryVersion = CURRENT_FACTORY_VERSION,
): Result<Hex, "bad_batch"> {
  const batch = checkFlushBatch(items);
  if (!batch.ok) return batch;
  const zero = "0x0000000000000000000000000000000000000000" as const;
  const ids = batch.value.map((i) => i.id);
  const tokens = batch.value.map((i) => i.token ?? zero);
  if (version === 1) {
    return ok(encodeFunctionData({ abi: FORWARDER_FACTORY_V1_ABI, functionName: "flush", args: [ids, tokens] }));
  }
  const table = [...new Set(tokens.map((t) => t.toLowerCase()))] as Address[];
  const tokenOf = `0x${tokens
    .map((t) =>
      table
        .indexOf(t.toLowerCase() as Address)
        .toString(16)
        .padStart(2, "0"),
    )
    .join("")}` as Hex;
  const fresh = batch.value.reduce((bits, item, i) => (item.fresh === true ? bits | (1n << BigInt(i)) : bits), 0n);
  return ok(
    encodeFunctionData({ abi: FORWARDER_FACTORY_ABI, functionName: "flush", args: [ids, table, tokenOf, fresh] }),
  );
}

/**
 * The items with `fresh` set from the node: a version-2 forwarder with no code at the latest block.
 * Only this owner's flushes deploy its forwarders, and it has one flush open per network at a time.
 */
export async function withFreshness(
  items: readonly FlushItem[],
  hasCode: (address: Address) => Promise<boolean | null>,
  owner: Address,
): Promise<FlushItem[]> {
  const codes = await Promise.all(items.map((i) => hasCode(forwarderAddress(owner, i.id, 2))));
  // Unknown (the node did not say): not fresh, so the factory looks, which is safe either way.
  return items.map((item, i) => ({ ...item, fresh: codes[i] === false }));
}

/** Signs a flush with every field given (the caller allocated the nonce): nothing is broadcast. */
export async function signFlush(options: {
  signer: TransactionSigner;
  chainId: number;
  items: readonly FlushItem[];
  nonce: number;
  gas: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}): Promise<Result<{ signed: Hex; factory: Address }, "bad_batch">> {
  const data = flushCalldata(options.items);
  if (!data.ok) return data;
  const factory = factoryAddress(options.signer.address);
  const { chainId, nonce, gas, maxFeePerGas, maxPriorityFeePerGas } = options;
  const transaction = { type: "eip1559" as const, chainId, nonce, to: factory, data: data.value, value: 0n, gas };
  const signed = await options.signer.signTransaction({ ...transaction, maxFeePerGas, maxPriorityFeePerGas });
  return ok({ signed, factory });
}

/**
 * Builds, signs (nonce, fees and gas from the node) and broadcasts a flush by the factory's owner;
 * answers its hash. For tools, tests and the bench: the service's flusher hands its call to the hot
 * wallet's outbox, which takes the nonce and stores the signed bytes before broadcasting, as for payouts.
 */
export async function sendFlush(options: {
  client: PublicClient;
  signer: TransactionSigner;
  items: readonly FlushItem[];
  /** The factory version (default the current); version 2's items get `fresh` from the node. */
  version?: FactoryVersion;
}): Promise<Result<Hex, ForwarderError>> {
  const version = options.version ?? CURRENT_FACTORY_VERSION;
  const owner = options.signer.address;
  const hasCode = async (address: Address) => {
    const code = await attempt(() => options.client.getCode({ address }));
    return code.ok ? code.value !== undefined && code.value !== "0x" : null;
  };
  const items = version === 1 ? options.items : await withFreshness(options.items, hasCode, owner);
  const data = flushCalldata(items, version);
  if (!data.ok) return data;
  const factory = factoryAddress(owner, version);
  return attempt(() => signAndSend(options.client, options.signer, factory, data.value));
}

export interface FlushOutcome {
  moved: { forwarder: Address; token: Address | null; amount: bigint }[];
  failed: { forwarder: Address; token: Address | null }[];
}

const FLUSH_EVENTS_ABI = [...FORWARDER_FACTORY_ABI, ...FORWARDER_FACTORY_V1_ABI, ...erc20Abi] as const;

/**
 * What a mined flush did, from its receipt's logs: the native coin from the factory's events
 * (version 1's Flushed with token zero, version 2's FlushedNative), each token's move from the
 * token's own Transfer log from the forwarder to `destination` (the factory's owner; version 1's
 * token Flushed says the same, so it is not counted twice), failures from FlushFailed.
 */
export function flushOutcome(
  factory: Address,
  logs: readonly { address: string; data: Hex; topics: readonly Hex[] }[],
  destination: Address,
): FlushOutcome {
  const outcome: FlushOutcome = { moved: [], failed: [] };
  const tokenOf = (t: Address) => (BigInt(t) === 0n ? null : getAddress(t));
  const fromFactory = (log: { address: string }) => log.address.toLowerCase() === factory.toLowerCase();
  for (const log of logs) {
    let event: ReturnType<typeof decodeEventLog<typeof FLUSH_EVENTS_ABI>>;
    try {
      const topics = [...log.topics] as [] | [Hex, ...Hex[]];
      event = decodeEventLog({ abi: FLUSH_EVENTS_ABI, data: log.data, topics });
    } catch {
      continue;
    }
    if (event.eventName === "Transfer") {
      const { from, to, value } = event.args;
      if (fromFactory(log) || to.toLowerCase() !== destination.toLowerCase()) continue;
      outcome.moved.push({ forwarder: getAddress(from), token: getAddress(log.address), amount: value });
    } else if (!fromFactory(log)) {
      // Another contract's event of the same shape: only the factory's count.
    } else if (event.eventName === "FlushedNative") {
      outcome.moved.push({ forwarder: getAddress(event.args.forwarder), token: null, amount: event.args.amount });
    } else if (event.eventName === "Flushed" && tokenOf(event.args.token) === null) {
      outcome.moved.push({ forwarder: getAddress(event.args.forwarder), token: null, amount: event.args.amount });
    } else if (event.eventName === "FlushFailed") {
      outcome.failed.push({ forwarder: getAddress(event.args.forwarder), token: tokenOf(event.args.token) });
    }
  }
  return outcome;
}
