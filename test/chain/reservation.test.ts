// Reservation both ways (product §26, issue 43): every purpose of the hot wallet sees one available balance, so a deployment never spends gas held for queued payouts, queued payouts never spend gas promised to a deployment in flight, and two processes racing never promise the same coin twice.
import { type Hex, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hotChainsOf } from "../../src/chain/hotWallet.ts";
import { walletNow } from "../../src/chain/outbox.ts";
import { DEPLOYMENT_PROXY, FACTORY_DEPLOY_SALT, factoryInitCode } from "../../src/domain/forwarders.ts";
import { QUEUED_TOKEN_PAYOUT_GAS } from "../../src/domain/hotTransaction.ts";
import { findPayout } from "../../src/store/payouts.ts";
import { CHAIN_PAYOUT_DEFAULTS, payoutChainsOf, runChainPayoutBatch } from "../../src/workers/chainPayouts.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import { CONFIRMATIONS, outboxOf, startLiveServer, usdt, usdtEntry } from "../support/live.ts";
import { admin, createTestDatabase, storeKind, type TestDatabase, type TestServer } from "../support/server.ts";
import { expectLedgerBalanced, fundedMerchant, withdraw } from "../support/withdrawals.ts";

let chain: LocalChain;
let token: TestToken;
let database: TestDatabase;
let server: TestServer;
/** A second service on the same database (PostgreSQL), or the first again (SQLite: one writer anyway). */
let other: TestServer;
let otherInstance: TestServer | null = null;

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  database = await createTestDatabase();
  // The network and USDT configured, the factory not deployed: its deployment is one of the purposes raced here.
  server = await startLiveServer(chain, token, { database, configure: false });
  const network = await admin(server, "PUT", "/networks/ethereum", {
    chainId: chain.chainId,
    rpcUrl: chain.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status, network.text).toBe(200);
  const entry = await admin(server, "PUT", "/currencies/USDT", usdtEntry(token));
  expect(entry.status, entry.text).toBe(200);
  otherInstance =
    storeKind() === "postgres" ? await startLiveServer(chain, token, { database, configure: false }) : null;
  other = otherInstance ?? server;
  await chain.waitForReceipt(await token.mint(hot(), usdt("1000")));
}, 60_000);

afterAll(async () => {
  await server?.close();
  await otherInstance?.close();
  await database?.drop();
  await chain?.close();
});

function hot(): Hex {
  const address = server.ctx.wallet?.hotAddress;
  if (!address) throw new Error("no wallet");
  return address;
}

async function setHotBalance(wei: bigint): Promise<void> {
  await chain.client.request({ method: "anvil_setBalance" as never, params: [hot(), toHex(wei)] as never });
}

async function payoutBatch(on: TestServer) {
  return runChainPayoutBatch(on.ctx.store, await payoutChainsOf(on.ctx), {
    now: () => new Date(),
    ...CHAIN_PAYOUT_DEFAULTS,
    publicBaseUrl: on.config.publicBaseUrl,
    log: on.app.log,
  });
}

/** The fee the outbox signs with now (no block is mined in between: anvil's base fee stays). */
async function maxFeePerGas(): Promise<bigint> {
  const [ethereum] = await hotChainsOf(server.ctx);
  const wallet = ethereum ? await walletNow(ethereum) : null;
  if (!wallet) throw new Error("the node did not answer");
  return wallet.fees.maxFeePerGas;
}

/** What the factory's deployment may cost at most: the service's gas (the estimate with its 20% headroom) at `fee`. */
async function deploymentCost(fee: bigint): Promise<bigint> {
  const data = `${FACTORY_DEPLOY_SALT}${factoryInitCode(hot()).slice(2)}` as Hex;
  const estimate = await chain.client.estimateGas({ account: hot(), to: DEPLOYMENT_PROXY, data });
  return ((estimate * 120n) / 100n) * fee;
}

async function queuedPayout(on: TestServer): Promise<string> {
  const m = await fundedMerchant(on, "100");
  const w = await withdraw(on, m, { amount: "10" });
  expect(w.answer.status, w.answer.text).toBe(200);
  expect(await findPayout(on.ctx.store, w.requestId)).toMatchObject({ state: "queued" });
  return w.requestId;
}

describe("one available balance for every purpose of the hot wallet", () => {
  it("a deployment waits instead of spending the gas held for queued payouts", async () => {
    const requestId = await queuedPayout(server);
    // The deployment alone fits, but not with what the queued token payout holds back (its gas bound at the fee signed with now).
    const fee = await maxFeePerGas();
    await setHotBalance((await deploymentCost(fee)) + QUEUED_TOKEN_PAYOUT_GAS * fee - 1n);
    const refused = await admin(server, "POST", "/networks/ethereum/factory");
    expect([refused.status, refused.body.code], refused.text).toEqual([409, "funds_promised"]);
    expect(await outboxOf(server, "deployment")).toEqual([]);
    expect(await chain.client.getTransactionCount({ address: hot(), blockTag: "pending" })).toBe(0);
    // The payout it waited for is still the wallet's to pay.
    await payoutBatch(server);
    expect((await outboxOf(server, "payout")).map((t) => t.purpose_id)).toEqual([requestId]);
    await chain.mine(CONFIRMATIONS);
    await payoutBatch(server);
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({ state: "completed" });
  });
});

describe("two processes racing for the hot wallet", () => {
  it("never promise the same coin to two transactions", async () => {
    const fee = await maxFeePerGas();
    const cost = await deploymentCost(fee);
    const requestId = await queuedPayout(other);
    // Each transaction alone fits the balance; both do not.
    await setHotBalance(cost);
    await chain.setAutomine(false);
    try {
      const [deployed] = await Promise.all([admin(server, "POST", "/networks/ethereum/factory"), payoutBatch(other)]);
      // The queued payout came first: the deployment is refused however the two interleaved.
      expect([deployed.status, deployed.body.code], deployed.text).toEqual([409, "funds_promised"]);
      const open = [...(await outboxOf(server, "payout")), ...(await outboxOf(server, "deployment"))].filter((t) =>
        ["signed", "broadcast"].includes(t.state),
      );
      expect(open.map((t) => t.purpose_id)).toEqual([requestId]);
      const promised = open.reduce(
        (sum, t) => sum + BigInt(t.value_wei) + BigInt(t.gas_limit) * BigInt(t.max_fee_per_gas),
        0n,
      );
      expect(promised <= cost).toBe(true);
    } finally {
      await chain.setAutomine(true);
    }
    await chain.mine(CONFIRMATIONS);
    await payoutBatch(other);
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({ state: "completed" });
    await expectLedgerBalanced(server);
  });
});

describe("one available balance, the other way", () => {
  it("queued payouts wait instead of spending the gas promised to a deployment in flight", async () => {
    const fee = await maxFeePerGas();
    await setHotBalance(await deploymentCost(fee));
    await chain.setAutomine(false);
    let requestId = "";
    try {
      const deploying = await admin(server, "POST", "/networks/ethereum/factory");
      expect([deploying.status, deploying.body.state], deploying.text).toEqual([202, "pending"]);
      requestId = await queuedPayout(server);
      await payoutBatch(server);
      // The balance covers the payout alone, not both: the payout waits for funds, nothing is signed for it.
      expect(await findPayout(server.ctx.store, requestId)).toMatchObject({
        state: "queued",
        processorStatus: "awaiting_funds",
      });
      expect((await outboxOf(server, "payout")).filter((t) => t.purpose_id === requestId)).toEqual([]);
    } finally {
      await chain.setAutomine(true);
    }
    await chain.mine(CONFIRMATIONS);
    await payoutBatch(server);
    expect((await outboxOf(server, "deployment")).map((t) => t.state)).toEqual(["confirmed"]);
    // Funded again, the payout goes.
    await setHotBalance(10n ** 18n);
    await payoutBatch(server);
    await chain.mine(CONFIRMATIONS);
    await payoutBatch(server);
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({ state: "completed" });
    await expectLedgerBalanced(server);
  });
});
