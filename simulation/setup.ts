// A seed's starting world, made as an operator would: networks and their factories through the operator API, the catalog, and two merchants with withdrawal methods.
import { parseUnits } from "viem";
import { assert } from "../src/domain/result.ts";
import { simAccount } from "./network.ts";
import type { SimProcess } from "./process.ts";
import { admin } from "./requests.ts";
import type { Merchant, World } from "./world.ts";

function must(answer: { status: number; body: any }, what: string, status = 200): any {
  assert(answer.status === status, `set-up: ${what} answered ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Configures every network, deploys its factory through the hot wallet's outbox and waits until it is recorded. */
async function configureNetworks(world: World, process: SimProcess): Promise<void> {
  for (const network of world.networks.values()) {
    const { spec } = network;
    must(
      await admin(process, "PUT", `/networks/${spec.name}`, {
        chainId: spec.chainId,
        rpcUrl: network.rpcUrl,
        confirmations: spec.confirmations,
      }),
      `network ${spec.name}`,
    );
    must(await admin(process, "POST", `/networks/${spec.name}/factory`), `factory of ${spec.name}`, 202);
  }
  const payouts = process.workers.loops.chainPayouts;
  assert(payouts !== undefined, "a live process runs the chain payout loop");
  for (let round = 0; round < 40; round++) {
    const networks = must(await admin(process, "GET", "/networks"), "networks") as { factoryDeployed: boolean }[];
    if (networks.every((n) => n.factoryDeployed)) return;
    // A network's confirmations at a time: the deployment is mined, then deep, in a round or two.
    for (const network of world.networks.values()) {
      for (let i = 0; i < network.spec.confirmations; i++) await network.chain.mine(world.nextSecond());
    }
    await payouts.runOnce();
  }
  throw new Error("set-up: the factories were never recorded");
}

async function addCatalog(world: World, process: SimProcess): Promise<void> {
  for (const { spec, token } of world.networks.values()) {
    must(
      await admin(process, "PUT", `/currencies/${spec.internalTicker}`, {
        ticker: "USDT",
        fullName: "Tether USD",
        network: spec.name,
        contractAddress: token,
        type: "stablecoin",
        icon: "/icons/usdt.svg",
        iconDark: "/icons/usdt-dark.svg",
        internalTicker: spec.internalTicker,
        decimals: 6,
        networkFee: spec.networkFee,
        withdrawalMin: "5",
        withdrawalMax: "100000",
        rateUsd: "1",
      }),
      `currency ${spec.internalTicker}`,
    );
  }
}

async function addMerchant(world: World, process: SimProcess, index: number): Promise<Merchant> {
  const created = must(
    await admin(process, "POST", "/merchants", { email: `merchant-${index}@simulation.test`, feePercent: "1" }),
    "merchant",
  );
  const key = must(await admin(process, "POST", `/merchants/${created.id}/api-keys`, {}), "api key");
  const methods = new Map<string, { id: number; address: `0x${string}` }>();
  for (const { spec } of world.networks.values()) {
    const address = simAccount(`merchant-${index}-${spec.name}`).address;
    const method = must(
      await admin(process, "POST", `/merchants/${created.id}/withdrawal-methods`, {
        currency: spec.internalTicker,
        address,
      }),
      "withdrawal method",
    );
    methods.set(spec.internalTicker, { id: method.id, address });
  }
  return { id: created.id, apiKey: key.apiKey, secretKey: key.secretKey, methods, withdrawals: [] };
}

/** What each merchant holds of each entry at the start (an operator's adjustment, backed by the hot wallet's tokens). */
export const OPENING_BALANCE = "500";

/**
 * Each merchant's opening balance on each entry: the operator credits it (an adjustment) and puts
 * the same tokens in the hot wallet, so that withdrawals and refunds have money from the first step.
 */
async function openBalances(world: World, process: SimProcess): Promise<void> {
  for (const network of world.networks.values()) {
    for (const merchant of world.merchants) {
      must(
        await admin(process, "POST", `/merchants/${merchant.id}/balance-adjustments`, {
          currency: network.spec.internalTicker,
          amount: OPENING_BALANCE,
          memo: "opening balance",
        }),
        "opening balance",
      );
    }
    await network.mint(world.wallet.hotAddress, parseUnits(OPENING_BALANCE, 6) * BigInt(world.merchants.length));
  }
}

/** The world every seed starts from: one process, the networks open for crypto, two merchants with money. */
export async function setUp(world: World): Promise<void> {
  const process = await world.startProcess();
  await configureNetworks(world, process);
  await addCatalog(world, process);
  for (const index of [0, 1]) world.merchants.push(await addMerchant(world, process, index));
  await openBalances(world, process);
  // The set-up is final: no reorganisation of the run reaches back to it.
  for (const network of world.networks.values()) {
    for (let i = 0; i <= network.spec.maxReorgDepth; i++) await network.chain.mine(world.nextSecond());
  }
}
