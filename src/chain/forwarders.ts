// The forwarder factory on a node (product §24): its idempotent deployment through the deterministic proxy, and batch flushes signed by a given account.
import {
  decodeEventLog,
  encodeFunctionData,
  getAddress,
  type PublicClient,
  type TransactionSerializableEIP1559,
} from "viem";
import type { ChainError, Hex } from "../domain/chain.ts";
import { FORWARDER_FACTORY_ABI } from "../domain/forwarderContracts.generated.ts";
import {
  type Address,
  checkFlushBatch,
  DEPLOYMENT_PROXY,
  FACTORY_DEPLOY_SALT,
  type FlushItem,
  factoryAddress,
  factoryInitCode,
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
): Promise<Result<{ address: Address; deployed: boolean }, ForwarderError>> {
  const address = factoryAddress(owner);
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
}): Promise<Result<{ address: Address; transactionHash: Hex | null }, ForwarderError>> {
  const { client, signer } = options;
  const owner = options.owner ?? signer.address;
  const status = await factoryStatus(client, owner);
  if (!status.ok) return status;
  if (status.value.deployed) return ok({ address: status.value.address, transactionHash: null });
  const address = status.value.address;
  const proxy = await attempt(() => client.getCode({ address: DEPLOYMENT_PROXY }));
  if (!proxy.ok) return proxy;
  if (proxy.value === undefined || proxy.value === "0x") {
    return err("no_deployment_proxy", `no deterministic deployment proxy at ${DEPLOYMENT_PROXY} on this network`);
  }
  const data = `${FACTORY_DEPLOY_SALT}${factoryInitCode(owner).slice(2)}` as Hex;
  const sent = await attempt(async () => {
    const hash = await signAndSend(client, signer, getAddress(DEPLOYMENT_PROXY), data);
    const receipt = await client.waitForTransactionReceipt({ hash, timeout: RECEIPT_TIMEOUT_MS });
    return { hash, status: receipt.status };
  });
  if (!sent.ok) return sent;
  const after = await factoryStatus(client, owner);
  if (!after.ok) return after;
  if (sent.value.status !== "success" || !after.value.deployed) {
    return err("deploy_failed", `the deployment ${sent.value.hash} left no code at ${address}`);
  }
  return ok({ address, transactionHash: sent.value.hash });
}

/** The factory's flush(ids, tokens) call data for a batch (null token: the native coin only). */
export function flushCalldata(items: readonly FlushItem[]): Result<Hex, "bad_batch"> {
  const batch = checkFlushBatch(items);
  if (!batch.ok) return batch;
  const zero = "0x0000000000000000000000000000000000000000" as const;
  return ok(
    encodeFunctionData({
      abi: FORWARDER_FACTORY_ABI,
      functionName: "flush",
      args: [batch.value.map((i) => i.id), batch.value.map((i) => i.token ?? zero)],
    }),
  );
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
}): Promise<Result<Hex, ForwarderError>> {
  const data = flushCalldata(options.items);
  if (!data.ok) return data;
  const factory = factoryAddress(options.signer.address);
  return attempt(() => signAndSend(options.client, options.signer, factory, data.value));
}

export interface FlushOutcome {
  moved: { forwarder: Address; token: Address | null; amount: bigint }[];
  failed: { forwarder: Address; token: Address | null }[];
}

/** What a mined flush did, from the factory's Flushed and FlushFailed logs in its receipt. */
export function flushOutcome(
  factory: Address,
  logs: readonly { address: string; data: Hex; topics: readonly Hex[] }[],
): FlushOutcome {
  const outcome: FlushOutcome = { moved: [], failed: [] };
  const tokenOf = (t: Address) => (BigInt(t) === 0n ? null : getAddress(t));
  for (const log of logs) {
    if (log.address.toLowerCase() !== factory.toLowerCase()) continue;
    let event: ReturnType<typeof decodeEventLog<typeof FORWARDER_FACTORY_ABI>>;
    try {
      const topics = [...log.topics] as [] | [Hex, ...Hex[]];
      event = decodeEventLog({ abi: FORWARDER_FACTORY_ABI, data: log.data, topics });
    } catch {
      continue;
    }
    if (event.eventName === "Flushed") {
      const { forwarder, token, amount } = event.args;
      outcome.moved.push({ forwarder: getAddress(forwarder), token: tokenOf(token), amount });
    } else {
      outcome.failed.push({ forwarder: getAddress(event.args.forwarder), token: tokenOf(event.args.token) });
    }
  }
  return outcome;
}
