// Deploying the forwarder factory on a network (product §24): one idempotent operation, a hot-wallet transaction stored before it is broadcast and followed until its block is deep.
import type { ChainClient, Hex } from "../domain/chain.ts";
import { DEPLOYMENT_PROXY, FACTORY_DEPLOY_SALT, factoryAddress, factoryInitCode } from "../domain/forwarders.ts";
import type { OutboxRefusal } from "../domain/hotTransaction.ts";
import { minedDeploymentHash, pendingDeployments, recordFactoryDeployed } from "../store/factoryDeployments.ts";
import { findNetwork, type Network } from "../store/networks.ts";
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
  | "funds_promised"
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

/** Whether a deployment of this network is still in flight after the outbox followed it once now. */
async function stillInFlight(d: Deploying): Promise<string | null> {
  await d.ctx.outbox.follow(d.network.name);
  return (await pendingDeployments(d.ctx.store, d.network.name)).get(d.network.name)?.hash ?? null;
}

const OUTBOX_REFUSALS: Record<Exclude<OutboxRefusal, "in_flight">, string> = {
  node_unavailable: "The node did not answer; nothing was sent. Try again.",
  signer_unavailable: "The hot wallet's signer did not sign; nothing was sent. Try again.",
  funds_promised:
    "The hot wallet's coin on this network is promised to transactions in flight and queued payouts: fund the hot wallet (GET /admin/v1/networks shows it), then deploy; nothing was sent.",
  no_wallet: "WALLET_MNEMONIC is not set.",
  network_not_found: "The network is not configured.",
};

/** Signs the deployment through the hot wallet's outbox (stored before it is broadcast, one in flight per network); answers its hash. */
async function submitDeployment(d: Deploying): Promise<Hex> {
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
  const estimate = await client.estimateGas({ from: owner, to: DEPLOYMENT_PROXY, data });
  if (!estimate.ok) refuseNodeUnavailable("eth_estimateGas", estimate);
  const gas = (estimate.value * GAS_HEADROOM_PERCENT) / 100n;
  const request = { to: DEPLOYMENT_PROXY, value: 0n, data };
  const sent = await d.ctx.outbox.submit(network.name, {
    purpose: "deployment",
    purposeId: d.factory.toLowerCase(),
    call: request,
    gas,
    tokens: null,
  });
  if (sent.ok) return sent.value.hash;
  if (sent.error === "in_flight") {
    const raced = (await pendingDeployments(d.ctx.store, network.name)).get(network.name);
    if (raced) return raced.hash as Hex;
    return refuseNodeUnavailable("the outbox", { error: "in_flight", detail: "a deployment settled meanwhile" });
  }
  if (sent.error === "node_unavailable") return refuse("node_unavailable", OUTBOX_REFUSALS.node_unavailable, "/", null);
  if (sent.error === "funds_promised") return refuse("funds_promised", OUTBOX_REFUSALS.funds_promised, "/", null);
  if (sent.error === "signer_unavailable")
    return refuse("node_unavailable", OUTBOX_REFUSALS.signer_unavailable, "/", null);
  return refuse("wallet_not_configured", OUTBOX_REFUSALS[sent.error], "/", null);
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
  const inFlight = (await pendingDeployments(ctx.store, network.name)).get(network.name) ?? null;
  const pending = inFlight === null ? null : await stillInFlight(d);
  // The service's own deployment is recorded once settled (deep), even when its code is there already.
  if (pending === null && (await hasCode(d))) return recordDeployed(d, (inFlight?.hash ?? null) as Hex | null);
  if (pending !== null) {
    return { network: network.name, factoryAddress: d.factory, state: "pending", transactionHash: pending as Hex };
  }
  const hash = await submitDeployment(d);
  // Stored already: a failed broadcast is sent again by the outbox; a node that mined it at once (a
  // local node) answers deployed now.
  if ((await stillInFlight(d)) === null && (await hasCode(d))) return recordDeployed(d, hash);
  return { network: network.name, factoryAddress: d.factory, state: "pending", transactionHash: hash };
}
