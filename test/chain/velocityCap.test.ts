// The operator's velocity cap per network (product §31) against a local chain: a payout over the last 24 hours' cap waits queued with those behind it, /metrics and the operator API show it, a higher cap lets it go, and racing batches never sign past it.
import { randomUUID } from "node:crypto";
import { type Hex, parseEther } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcChainClient } from "../../src/chain/rpc.ts";
import { findPayout } from "../../src/store/payouts.ts";
import { CHAIN_PAYOUT_DEFAULTS, type PayoutChain, runChainPayoutBatch } from "../../src/workers/chainPayouts.ts";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "../support/chain.ts";
import { admin, call, createMerchant, expectProblem, startTestServer, type TestServer } from "../support/server.ts";
import { expectLedgerBalanced, withdraw } from "../support/withdrawals.ts";

let server: TestServer;
let chain: LocalChain;
let token: TestToken;
const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });

beforeAll(async () => {
  [server, chain] = await Promise.all([startTestServer(), startLocalChain()]);
  token = await chain.deployToken({ decimals: 6 });
  const network = await admin(server, "PUT", "/networks/local", {
    chainId: chain.chainId,
    rpcUrl: chain.url,
    confirmations: 1,
  });
  expect(network.status).toBe(200);
  // USDT (1 USD at the catalog's static rate) pays out as the local token.
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("currencies")
      .set({ network: "local", contract_address: token.address })
      .where("ticker", "=", "USDT")
      .execute(),
  );
  await chain.sendEth(chain.accounts[1] as Hex, hot.address, parseEther("1"));
  await chain.waitForReceipt(await token.mint(hot.address, 1_000_000_000n));
}, 60_000);
afterAll(async () => {
  await server?.close();
  await chain?.close();
});

const payoutChain: () => PayoutChain = () => ({
  network: "local",
  chainId: chain.chainId,
  confirmations: 1,
  client: rpcChainClient(chain.url),
  hot,
  nativeCurrency: "ETH",
  maxFeePerGasWei: parseEther("0.0000005"),
  replaceAfterMs: 60_000,
});

function batch() {
  return runChainPayoutBatch(server.ctx.store, [payoutChain()], {
    now: () => new Date(),
    ...CHAIN_PAYOUT_DEFAULTS,
    publicBaseUrl: server.config.publicBaseUrl,
    log: server.app.log,
    crashAt: null,
  });
}

async function merchantWithUsdt(funds: string) {
  const m = await createMerchant(server);
  await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
    currency: "USDT",
    amount: funds,
    memo: "test",
  });
  const destination = `0x${randomUUID().replaceAll("-", "")}${"cd".repeat(4)}`;
  const method = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
    currency: "USDT",
    address: destination,
  });
  expect(method.status).toBe(200);
  return { ...m, methodId: method.body.id as number };
}

async function stateOf(requestId: string) {
  const p = await findPayout(server.ctx.store, requestId);
  return [p?.state, p?.processorStatus];
}

async function waitingMetric(): Promise<string | undefined> {
  const metrics = await call(server.baseUrl, "GET", "/metrics", {
    headers: { authorization: `Bearer ${server.adminToken}` },
  });
  return /payouts_awaiting_velocity_cap\{network="local"\} (\d+)/.exec(metrics.text)?.[1];
}

describe("the operator's velocity cap", () => {
  it("refuses a bad cap and an unknown network, changing nothing", async () => {
    for (const usdPer24Hours of ["0", "-5", "1.005", "abc"]) {
      expectProblem(
        await admin(server, "PUT", "/networks/local/velocity-cap", { usdPer24Hours }),
        400,
        "invalid_velocity_cap",
      );
    }
    expectProblem(await admin(server, "PUT", "/networks/local/velocity-cap", { usd: "5" }), 400, "validation_failed");
    expectProblem(
      await admin(server, "PUT", "/networks/nowhere/velocity-cap", { usdPer24Hours: "5" }),
      404,
      "network_not_found",
    );
    expectProblem(await admin(server, "GET", "/networks/nowhere/velocity-cap"), 404, "network_not_found");
    const view = await admin(server, "GET", "/networks/local/velocity-cap");
    expect(view.body).toMatchObject({ network: "local", usdPer24Hours: null, waitingPayouts: 0 });
  });

  it("holds a payout over the cap and those behind it, shows them, and lets them go under a higher cap", async () => {
    const set = await admin(server, "PUT", "/networks/local/velocity-cap", { usdPer24Hours: "25" });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ usdPer24Hours: "25", spentUsdLast24Hours: "0" });
    const m = await merchantWithUsdt("100");
    const first = await withdraw(server, m, { amount: "10" });
    const second = await withdraw(server, m, { amount: "20" });
    const third = await withdraw(server, m, { amount: "10" });
    for (const w of [first, second, third]) expect(w.answer.status, JSON.stringify(w.answer.body)).toBe(200);

    await batch();
    expect(await stateOf(first.requestId)).toEqual(["sent", expect.any(String)]);
    // 10 + 20 is over 25: the second waits, and the third (10 would fit) waits behind it.
    expect(await stateOf(second.requestId)).toEqual(["queued", "awaiting_velocity_cap"]);
    expect(await stateOf(third.requestId)).toEqual(["queued", "awaiting_velocity_cap"]);
    expect(await waitingMetric()).toBe("2");
    const view = await admin(server, "GET", "/networks/local/velocity-cap");
    expect(view.body).toMatchObject({ usdPer24Hours: "25", spentUsdLast24Hours: "10", waitingPayouts: 2 });

    await admin(server, "PUT", "/networks/local/velocity-cap", { usdPer24Hours: "40" });
    await batch();
    expect((await stateOf(second.requestId))[0]).toBe("sent");
    expect((await stateOf(third.requestId))[0]).toBe("sent");
    expect((await waitingMetric()) ?? "none").toBe("none");
    const after = await admin(server, "GET", "/networks/local/velocity-cap");
    expect(after.body).toMatchObject({ spentUsdLast24Hours: "40", waitingPayouts: 0 });
    await expectLedgerBalanced(server);
  });

  it("never signs past the cap when batches race: what fits goes once, the rest waits", async () => {
    await admin(server, "PUT", "/networks/local/velocity-cap", { usdPer24Hours: "70" }); // 40 spent: 30 left
    const m = await merchantWithUsdt("100");
    const payouts = [];
    for (let i = 0; i < 4; i++) payouts.push(await withdraw(server, m, { amount: "10" }));
    await Promise.all([batch(), batch(), batch()]);
    const states = await Promise.all(payouts.map((p) => stateOf(p.requestId)));
    expect(states.filter(([state]) => state === "sent")).toHaveLength(3);
    expect(states[3]).toEqual(["queued", "awaiting_velocity_cap"]);
    const view = await admin(server, "GET", "/networks/local/velocity-cap");
    expect(view.body).toMatchObject({ spentUsdLast24Hours: "70", waitingPayouts: 1 });

    // Removing the cap lets the last one go.
    await admin(server, "PUT", "/networks/local/velocity-cap", { usdPer24Hours: null });
    await batch();
    expect((await stateOf(payouts[3]!.requestId))[0]).toBe("sent");
    await expectLedgerBalanced(server);
  });
});
