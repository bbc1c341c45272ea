// Deploying the forwarder factory on a network (product §24): one idempotent operation, a hot-wallet transaction stored before it is broadcast and followed until its block is deep.
import { keccak256 } from "viem";
import type { ChainClient, ChainReceipt, Hex } from "../domain/chain.ts";
import { landedOf } from "../domain/finality.ts";
import { DEPLOYMENT_PROXY, FACTORY_DEPLOY_SALT, factoryAddress, factoryInitCode } from "../domain/forwarders.ts";
import { initialFees } from "../domain/hotTransaction.ts";
import { listCurrencies } from "../store/currencies.ts";
import {
  type FactoryDeployment,
  insertDeployment,
  minedDeploymentHash,
  pendingDeployment,
  pendingDeployments,
  recordFactoryDeployed,
  settleDeployment,
} from "../store/factoryDeployments.ts";
import { findNetwork, type Network, takeHotNonce } from "../store/networks.ts";
import { capInWei, findPayoutSettings } from "../store/payoutTransactions.ts";
import { nowIso } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { forgetRails } from "./rails.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

/** Gas headroom over the node's estimate (the deployment used 658,585 gas on anvil). */
const GAS_HEADROOM_PERCENT = 120n;

export interface FactoryDeploymentAnswer {
  network: string;
  /** The factory of the current hot wallet: the same address on every network. */
  factoryAddress: Hex;
  /** deployed: its code is on the network and recorded (the gate opens); pending: a deployment is in flight. */
  state: "deployed" | "pending";
  /** The deployment transaction this service sent (null: found deployed without one in flight). */
  transactionHash: Hex | null;
}

interface Deploying {
  ctx: ServiceContext;
  network: Network;
  client: ChainClient;
  owner: Hex;
  factory: Hex;
}

/** What deploying the factory refuses. */
export type DeployFactoryRefusal =
  | "node_unavailable"
  | "no_deployment_proxy"
  | "wallet_not_configured"
  | "network_not_found";

function refuseNodeUnavailable(what: string, error: { error: string; detail?: string | undefined }): never {
  const why = `${error.error}${error.detail ? `: ${error.detail}` : ""}`;
  return refuse(
    "node_unavailable",
    `The node did not answer ${what} (${why}); nothing was sent. Try again.`,
    "/",
    null,
  );
}

/** Whether the factory has code on the network now (503 node_unavailable when the node does not say). */
async function hasCode(d: Deploying): Promise<boolean> {
  const code = await d.client.code(d.factory);
  if (!code.ok) refuseNodeUnavailable("eth_getCode", code);
  // CREATE2 binds the address to the init code (the committed creation code and this owner), and the
  // constructor is deterministic: any code at this address is the expected factory's runtime code.
  return code.value !== "0x";
}

async function recordDeployed(d: Deploying, hash: Hex | null): Promise<FactoryDeploymentAnswer> {
  await d.ctx.store.transaction((tx) => recordFactoryDeployed(tx, d.network.name, d.factory, nowIso()));
  forgetRails(d.ctx);
  // Asked again later: the deployment this service sent, if it sent one (null: found deployed).
  const sent = hash ?? ((await minedDeploymentHash(d.ctx.store, d.network.name, d.factory)) as Hex | null);
  return { network: d.network.name, factoryAddress: d.factory, state: "deployed", transactionHash: sent };
}

/** The deployment's block, if it is in one: settled when the network's confirmations deep, else still in flight. */
async function landed(d: Deploying, pending: FactoryDeployment): Promise<boolean | null> {
  const found = await landedOf(d.client, [pending], (p) => p.hash as Hex, d.network.confirmations);
  if (!found.ok) refuseNodeUnavailable("eth_getTransactionReceipt", found);
  if (found.value === null) return null;
  // In a shallower block it stays in flight: a reorganisation may take the block away (it is then broadcast again).
  return found.value.deep ? settleMined(d, pending, found.value.receipt) : true;
}

/**
 * Follows a deployment in flight: settled when mined and the network's confirmations deep (gas
 * ledgered) or when another transaction took its nonce, else broadcast again (the same bytes: never
 * a second deployment). Answers whether it is still in flight.
 */
async function follow(d: Deploying, pending: FactoryDeployment): Promise<boolean> {
  const first = await landed(d, pending);
  if (first !== null) return first;
  const mined = await d.client.nonce(pending.fromAddress as Hex, "latest");
  if (!mined.ok) refuseNodeUnavailable("eth_getTransactionCount", mined);
  if (mined.value > pending.nonce) {
    // Mined between the two reads, or its nonce used by another transaction (this one dropped).
    const again = await landed(d, pending);
    if (again !== null) return again;
    await d.ctx.store.transaction((tx) => settleDeployment(tx, pending, { state: "replaced" }, nowIso()));
    return false;
  }
  // A node that lost it (a restart, a dropped mempool) gets the same signed bytes again.
  await d.client.sendRawTransaction(pending.raw as Hex);
  return true;
}

/** A mined deployment: settled (reverted: failed), its gas the operator's in the network's native coin. */
async function settleMined(d: Deploying, pending: FactoryDeployment, receipt: ChainReceipt): Promise<false> {
  const currencies = await listCurrencies(d.ctx.store);
  const nativeCurrency =
    currencies.find((c) => c.network === d.network.name && c.contractAddress === null)?.ticker ?? null;
  const gasWei = receipt.gasUsed * receipt.effectiveGasPrice;
  const state = receipt.status === "success" ? "mined" : "failed";
  await d.ctx.store.transaction((tx) => settleDeployment(tx, pending, { state, gasWei, nativeCurrency }, nowIso()));
  return false;
}

/** Signs the deployment with the next hot-wallet nonce and stores it, in one transaction; answers it (or the one another request stored first). */
async function signDeployment(d: Deploying): Promise<FactoryDeployment> {
  const { client, owner, network } = d;
  const data = `${FACTORY_DEPLOY_SALT}${factoryInitCode(owner).slice(2)}` as Hex;
  const proxy = await client.code(DEPLOYMENT_PROXY);
  if (!proxy.ok) refuseNodeUnavailable("eth_getCode", proxy);
  if (proxy.value === "0x") {
    refuse(
      "no_deployment_proxy",
      `The ${network.name} network has no deterministic deployment proxy at ${DEPLOYMENT_PROXY}: the factory cannot have its address there (see docs/forwarders.md); nothing was sent.`,
      "/",
      null,
    );
  }
  const [fees, estimate, chainNonce, settings] = await Promise.all([
    client.fees(),
    client.estimateGas({ from: owner, to: DEPLOYMENT_PROXY, data }),
    client.nonce(owner, "pending"),
    findPayoutSettings(d.ctx.store, network.name),
  ]);
  if (!fees.ok) refuseNodeUnavailable("the fee quote", fees);
  if (!estimate.ok) refuseNodeUnavailable("eth_estimateGas", estimate);
  if (!chainNonce.ok) refuseNodeUnavailable("eth_getTransactionCount", chainNonce);
  const { gasPrice, maxFeePerGas, maxPriorityFeePerGas } = fees.value;
  const fee = initialFees(
    { maxFeePerGas: maxFeePerGas ?? gasPrice, maxPriorityFeePerGas: maxPriorityFeePerGas ?? gasPrice },
    capInWei(settings.maxFeePerGasGwei),
  );
  const wallet = d.ctx.wallet;
  if (wallet === null) return refuse("wallet_not_configured", "WALLET_MNEMONIC is not set.", "/", null);
  return d.ctx.store.transaction(async (tx) => {
    // The nonce lock first: a request racing this one waits here, then finds this deployment.
    const nonce = await takeHotNonce(tx, network.name, owner, chainNonce.value);
    const raced = await pendingDeployment(tx, network.name);
    if (raced) return raced;
    const raw = await wallet.hot().signTransaction({
      type: "eip1559",
      chainId: network.chainId,
      nonce,
      to: DEPLOYMENT_PROXY,
      data,
      value: 0n,
      gas: (estimate.value * GAS_HEADROOM_PERCENT) / 100n,
      ...fee,
    });
    const fields = { network: network.name, factory: d.factory, fromAddress: owner, nonce, raw };
    return insertDeployment(tx, { ...fields, hash: keccak256(raw) }, nowIso());
  });
}

/**
 * Deploys the factory of the current hot wallet on `networkName`, or finds it there: idempotent.
 * Code already at the factory's address (deployed by this service, anyone else, or on the way) is
 * recorded and answered `deployed`; a deployment in flight is followed and answered `pending`,
 * never signed twice; otherwise the hot wallet signs one (stored before it is broadcast).
 */
export function deployFactory(
  ctx: ServiceContext,
  networkName: string,
): Promise<Outcome<FactoryDeploymentAnswer, DeployFactoryRefusal>> {
  return withRefusals(() => deploy(ctx, networkName));
}

async function deploy(ctx: ServiceContext, networkName: string): Promise<FactoryDeploymentAnswer> {
  const wallet = ctx.wallet;
  if (wallet === null) {
    const detail = "WALLET_MNEMONIC is not set: there is no hot wallet to own a factory.";
    return refuse("wallet_not_configured", detail, "/", null);
  }
  const network = await findNetwork(ctx.store, ctx.box, networkName);
  if (!network) return refuse("network_not_found", `No network ${networkName} is configured.`, "/", null);
  const owner = wallet.hotAddress;
  const d: Deploying = {
    ctx,
    network,
    client: ctx.chains.for(network.name, network.rpcUrl),
    owner,
    factory: factoryAddress(owner),
  };
  const inFlight = await pendingDeployment(ctx.store, network.name);
  const stillInFlight = inFlight !== null && (await follow(d, inFlight));
  // The service's own deployment is recorded once settled (deep), even when its code is there already.
  if (!stillInFlight && (await hasCode(d))) return recordDeployed(d, (inFlight?.hash ?? null) as Hex | null);
  if (inFlight !== null && stillInFlight) {
    return {
      network: network.name,
      factoryAddress: d.factory,
      state: "pending",
      transactionHash: inFlight.hash as Hex,
    };
  }
  const signed = await signDeployment(d);
  const sent = await d.client.sendRawTransaction(signed.raw as Hex);
  // Stored already: a failed broadcast is sent again by the next call; a node that mined it at once (a
  // local node) answers deployed now.
  if (sent.ok && !(await follow(d, signed)) && (await hasCode(d))) return recordDeployed(d, signed.hash as Hex);
  return { network: network.name, factoryAddress: d.factory, state: "pending", transactionHash: signed.hash as Hex };
}

/**
 * The workers' side: follows each deployment in flight (broadcast again, settled once mined or
 * replaced, the factory recorded when its code is there), so that an operator who called once is
 * not needed for its nonce to be used. Never signs. Answers how many deployments were settled; a
 * node that does not answer is logged and tried again on the next pass.
 */
export async function followFactoryDeployments(
  ctx: ServiceContext,
  log: { warn(fields: object, message: string): void },
): Promise<number> {
  const wallet = ctx.wallet;
  if (wallet === null) return 0;
  let settled = 0;
  for (const pending of (await pendingDeployments(ctx.store)).values()) {
    const network = await findNetwork(ctx.store, ctx.box, pending.network);
    if (!network) continue;
    const owner = wallet.hotAddress;
    const client = ctx.chains.for(network.name, network.rpcUrl);
    const d: Deploying = { ctx, network, client, owner, factory: factoryAddress(owner) };
    const followed = await withRefusals(async () => {
      if (await follow(d, pending)) return;
      settled++;
      if (await hasCode(d)) await recordDeployed(d, pending.hash as Hex);
    });
    if (!followed.ok) {
      const detail = followed.refusal.detail;
      log.warn({ network: network.name, hash: pending.hash, detail }, "factory deployment not followed");
    }
  }
  return settled;
}
