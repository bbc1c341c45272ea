// Forwarder deposit addresses in the service (product §24, issue 36): the operator's factory deployment (idempotent, a hot-wallet transaction stored before broadcast), the live gate until it is recorded, forwarder invoices credited without sweeps, and invoices made before still swept.
import type { Hex } from "viem";
import { parseEther } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { factoryAddress, invoiceDepositAddress } from "../../src/domain/forwarders.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import {
  asLegacyDerivedInvoice,
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveMerchant,
  mineAndScan,
  outboxOf,
  payer,
  startLiveServer,
  usdt,
  usdtEntry,
} from "../support/live.ts";
import { admin, expectProblem, merchant, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
let hot: Hex;

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  // The network and USDT configured, the factory not deployed: what an operator has before the step.
  server = await startLiveServer(chain, token, { configure: false });
  const network = await admin(server, "PUT", "/networks/ethereum", {
    chainId: chain.chainId,
    rpcUrl: chain.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status, network.text).toBe(200);
  const entry = await admin(server, "PUT", "/currencies/USDT", usdtEntry(token));
  expect(entry.status, entry.text).toBe(200);
  hot = server.ctx.wallet?.hotAddress as Hex;
  await chain.waitForReceipt(await token.mint(payer(chain, 1), usdt("1000")));
}, 60_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

async function networkRow(name: string): Promise<Record<string, any>> {
  const list = await admin(server, "GET", "/networks");
  expect(list.status, list.text).toBe(200);
  return (list.body as Record<string, any>[]).find((n) => n.network === name) ?? {};
}

function deployments() {
  return outboxOf(server, "deployment");
}

describe("the factory's deployment and the live gate", () => {
  it("keeps live crypto behind the gate until the factory is deployed, and says to deploy it", async () => {
    const m = await liveMerchant(server);
    const refused = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "10",
    });
    expectProblem(refused, 400, "currency_unavailable");
    expect(refused.body.detail).toContain("deploy the factory");
    expect(refused.body.detail).toContain("/admin/v1/networks/ethereum/factory");
    const row = await networkRow("ethereum");
    expect(row).toMatchObject({
      factoryAddress: factoryAddress(hot),
      factoryDeployed: false,
      factoryDeployment: null,
    });
    expect(row.liveCrypto).toContain("deploy the factory");
  });

  it("answers 503 node_unavailable while the node is down, and signs nothing", async () => {
    chain.setFault("down");
    try {
      expectProblem(await admin(server, "POST", "/networks/ethereum/factory"), 503, "node_unavailable");
    } finally {
      chain.setFault("none");
    }
    expect(await deployments()).toEqual([]);
    expect(await chain.client.getTransactionCount({ address: hot })).toBe(0);
  });

  it("refuses an unknown network (404) and names it", async () => {
    expectProblem(await admin(server, "POST", "/networks/nowhere/factory"), 404, "network_not_found");
  });

  it("deploys once from the hot wallet: a second call while pending answers the same transaction, then deployed", async () => {
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), hot, parseEther("1")));
    await chain.setAutomine(false);
    let pendingHash: string;
    try {
      const first = await admin(server, "POST", "/networks/ethereum/factory");
      expect(first.status, first.text).toBe(202);
      expect(first.body).toMatchObject({ network: "ethereum", factoryAddress: factoryAddress(hot), state: "pending" });
      pendingHash = first.body.transactionHash;
      const again = await admin(server, "POST", "/networks/ethereum/factory");
      expect([again.status, again.body.transactionHash]).toEqual([202, pendingHash]);
      expect((await networkRow("ethereum")).factoryDeployment).toMatchObject({
        transactionHash: pendingHash,
        nonce: 0,
      });
      // One transaction of the hot wallet in the pool, nonce 0; the gate is still closed.
      expect(await chain.client.getTransactionCount({ address: hot, blockTag: "pending" })).toBe(1);
      const m = await liveMerchant(server);
      const still = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
        currency: "USDT",
        amount: "10",
      });
      expectProblem(still, 400, "currency_unavailable");
    } finally {
      await chain.setAutomine(true);
    }
    await chain.mine(CONFIRMATIONS);
    // The payout worker follows the deployment without the operator: mined and deep, it is recorded.
    const loop = server.workers.loops.chainPayouts;
    if (!loop) throw new Error("no chain payout loop");
    expect(await loop.runOnce()).toBeGreaterThanOrEqual(1);
    expect(await networkRow("ethereum")).toMatchObject({ factoryDeployed: true, factoryDeployment: null });
    const done = await admin(server, "POST", "/networks/ethereum/factory");
    expect([done.status, done.body.state, done.body.transactionHash]).toEqual([200, "deployed", pendingHash]);
    const code = await chain.client.getCode({ address: factoryAddress(hot) });
    expect(code !== undefined && code !== "0x").toBe(true);
    // Deploying again: answered deployed, nothing signed.
    const twice = await admin(server, "POST", "/networks/ethereum/factory");
    expect([twice.status, twice.body.state, twice.body.transactionHash]).toEqual([200, "deployed", pendingHash]);
    expect(await chain.client.getTransactionCount({ address: hot })).toBe(1);
    expect((await deployments()).map((d) => [d.state, d.hash, d.nonce])).toEqual([["confirmed", pendingHash, 0]]);
    expect(await networkRow("ethereum")).toMatchObject({
      factoryDeployed: true,
      factoryDeployment: null,
      liveCrypto: null,
    });
    // The deployment's gas is the operator's, in the ledger (balanced).
    await auditAndExpect(server);
  });
});

describe("invoices on forwarder addresses", () => {
  it("gives a new invoice the forwarder address: no code, not derived from the mnemonic, no deposit index", async () => {
    const m = await liveMerchant(server);
    const invoice = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "10",
    });
    expect(invoice.status, invoice.text).toBe(200);
    const row = await server.ctx.store.db
      .selectFrom("invoices")
      .select(["deposit_address", "deposit_index", "deposit_factory"])
      .where("id", "=", invoice.body.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({
      deposit_address: invoiceDepositAddress(hot, invoice.body.id),
      deposit_index: null,
      deposit_factory: factoryAddress(hot).toLowerCase(),
    });
    expect(await chain.client.getCode({ address: row.deposit_address as Hex })).toBeUndefined();
    const wallet = server.ctx.wallet;
    if (!wallet) throw new Error("no wallet");
    const derived = new Set(
      Array.from({ length: 200 }, (_, i) => (wallet.deposits?.address(i + 1) ?? "").toLowerCase()),
    );
    expect(derived.has((row.deposit_address ?? "").toLowerCase())).toBe(false);
    expect((row.deposit_address ?? "").toLowerCase()).not.toBe(hot.toLowerCase());
  });

  it("credits a forwarder deposit paid and confirmed, and creates no sweep", async () => {
    const m = await liveMerchant(server);
    const invoice = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "25",
    });
    expect(invoice.status, invoice.text).toBe(200);
    const address = await depositOf(server, invoice.body.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("25")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const done = await getInvoice(server, m.apiKey, invoice.body.id);
    expect(done.status).toBe("completed");
    const balances = await admin(server, "GET", `/merchants/${m.id}/balances`);
    const usdtBalance = (balances.body as { currency: string; available: string }[]).find((b) => b.currency === "USDT");
    expect(usdtBalance?.available).toBe("24");
    const sweeps = await server.ctx.store.db
      .selectFrom("sweeps")
      .select("id")
      .where("invoice_id", "=", invoice.body.id)
      .execute();
    expect(sweeps).toEqual([]);
    // Nothing was sent to the deposit address but the payment: no gas funding.
    expect(await chain.balance(address)).toBe(0n);
    await auditAndExpect(server);
  });

  it("still sweeps an invoice made before forwarders (a derived address)", async () => {
    const m = await liveMerchant(server);
    const invoice = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "25",
    });
    expect(invoice.status, invoice.text).toBe(200);
    const address = await asLegacyDerivedInvoice(server, invoice.body.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("25")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.body.id)).status).toBe("completed");
    const sweep = await server.ctx.store.db
      .selectFrom("sweeps")
      .select(["deposit_address", "amount"])
      .where("invoice_id", "=", invoice.body.id)
      .executeTakeFirstOrThrow();
    expect(sweep).toEqual({ deposit_address: address, amount: "25000000" });
    await auditAndExpect(server);
  });
});
