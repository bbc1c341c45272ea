// A deposit address per customer (product §30) on two local chains (chain ids 1 and 8453): one address for a customer and currency on both chains and under parallel requests; transfers become deposits credited once with their fees, flushed, with deposit.completed; below the minimum is dust; a reorganised deposit is reversed; an inactive address's transfer waits for the merchant.
import { type Hex, parseEther } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { customerDepositAddress } from "../../src/domain/depositAddresses.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  deployServiceFactory,
  payer,
  scan,
  startLiveServer,
  usdt,
  usdtEntry,
} from "../support/live.ts";
import { admin, createMerchant, merchant, type TestServer } from "../support/server.ts";

let mainnet: LocalChain;
let base: LocalChain;
let tokenMain: TestToken;
let tokenBase: TestToken;
let server: TestServer;
let shop: { id: string; apiKey: string };
let address: Hex;
let addressId: string;

beforeAll(async () => {
  [mainnet, base] = await Promise.all([startLocalChain({ chainId: 1 }), startLocalChain({ chainId: 8453 })]);
  [tokenMain, tokenBase] = await Promise.all([mainnet.deployToken(), base.deployToken()]);
  server = await startLiveServer(mainnet, tokenMain, { env: { FLUSH_BATCH_SIZE: "1" } });
  const hot = server.ctx.wallet?.hotAddress as Hex;
  const network = await admin(server, "PUT", "/networks/base", {
    chainId: 8453,
    rpcUrl: base.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status, network.text).toBe(200);
  await deployServiceFactory(server, base, "base");
  // A minimum on mainnet only: 5 USDT.
  expect((await admin(server, "PUT", "/currencies/USDT_ERC20", usdtEntry(tokenMain, { minDeposit: "5" }))).status).toBe(
    200,
  );
  const entry = await admin(
    server,
    "PUT",
    "/currencies/USDT_BASE",
    usdtEntry(tokenBase, { ticker: "USDT", network: "base", internalTicker: "USDT_BASE", networkFee: "2" }),
  );
  expect(entry.status, entry.text).toBe(200);
  for (const [chain, token] of [
    [mainnet, tokenMain],
    [base, tokenBase],
  ] as const) {
    await token.mint(payer(chain, 1), usdt("1000"));
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), hot, parseEther("10")));
  }
  shop = await createMerchant(server, { feePercent: "1" });
  await scan(server);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await Promise.all([mainnet?.close(), base?.close()]);
});

async function mineBothAndScan(blocks: number): Promise<void> {
  await Promise.all([mainnet.mine(blocks), base.mine(blocks)]);
  for (let i = 0; i < 10; i++) if ((await scan(server)) === 0) return;
}

async function deposits(query = ""): Promise<Record<string, any>[]> {
  const page = await merchant(server, shop.apiKey, "GET", `/public/v1/deposits?limit=100${query}`);
  expect(page.status, page.text).toBe(200);
  return page.body.data;
}

async function available(entry: string): Promise<string | undefined> {
  const rows = await admin(server, "GET", `/merchants/${shop.id}/balances`);
  return (rows.body as { internalTicker: string; available: string }[]).find((b) => b.internalTicker === entry)
    ?.available;
}

describe("a customer's deposit address", () => {
  it("is the same for the same customer and currency, on both chains, for repeated and 20 parallel requests", async () => {
    const create = () =>
      merchant(server, shop.apiKey, "POST", "/public/v1/deposit-addresses", { customer: "cust-1", currency: "USDT" });
    const first = await create();
    expect(first.status, first.text).toBe(200);
    const answers = [await create(), ...(await Promise.all(Array.from({ length: 20 }, create)))];
    expect(new Set(answers.map((a) => `${a.status} ${a.body.id} ${a.body.address}`))).toEqual(
      new Set([`200 ${first.body.id} ${first.body.address}`]),
    );
    const hot = server.ctx.wallet?.hotAddress as Hex;
    expect(first.body).toMatchObject({
      customer: "cust-1",
      currency: "USDT",
      address: customerDepositAddress(hot, shop.id, "USDT", "cust-1"),
      networks: ["ethereum", "base"],
      active: true,
    });
    address = first.body.address;
    addressId = first.body.id;
    const listed = await merchant(server, shop.apiKey, "GET", "/public/v1/deposit-addresses?customer=cust-1");
    expect(listed.body.data.map((a: { id: string }) => a.id)).toEqual([addressId]);
  });

  it("makes three deposits of three transfers on two networks, credited once each with the fees, flushed, with deposit.completed", async () => {
    await tokenMain.transfer(payer(mainnet, 1), address, usdt("100"));
    await tokenMain.transfer(payer(mainnet, 1), address, usdt("50"));
    await tokenBase.transfer(payer(base, 1), address, usdt("200"));
    await mineBothAndScan(1);
    // Automine: each transfer is a block, so the first may be deep already; the base one is not.
    expect((await deposits("&network=base")).map((d) => d.status)).toEqual(["pending"]);
    await mineBothAndScan(CONFIRMATIONS);
    await mineBothAndScan(CONFIRMATIONS);
    const done = await deposits();
    expect(
      done.map((d) => [d.network, d.amount, d.merchantFee, d.networkFee, d.creditedAmount, d.status]).sort(),
    ).toEqual(
      [
        ["base", "200", "2", "2", "196", "completed"],
        ["ethereum", "100", "1", "1", "98", "completed"],
        ["ethereum", "50", "0.5", "1", "48.5", "completed"],
      ].sort(),
    );
    expect([await available("USDT_ERC20"), await available("USDT_BASE")]).toEqual(["146.5", "196"]);
    const events = await merchant(server, shop.apiKey, "GET", "/public/v1/events?type=deposit.completed");
    const completedIds = events.body.data.map((e: { data: { deposit: { id: string } } }) => e.data.deposit.id);
    expect(completedIds.sort()).toEqual(done.map((d) => d.id).sort());
    const flushed = await server.ctx.store.db
      .selectFrom("flush_deposits")
      .select(["deposit_id", "state"])
      .where("deposit_id", "is not", null)
      .execute();
    expect(flushed.map((f) => f.deposit_id).sort()).toEqual(done.map((d) => d.id).sort());
    // Later passes credit nothing twice, and the flushes (one deposit a batch here) settle once deep.
    await mineBothAndScan(CONFIRMATIONS + 1);
    await mineBothAndScan(CONFIRMATIONS + 1);
    const states = await server.ctx.store.db
      .selectFrom("flush_deposits")
      .select("state")
      .where(
        "deposit_id",
        "in",
        done.map((d) => d.id),
      )
      .execute();
    expect(states.map((f) => f.state)).toEqual(["flushed", "flushed", "flushed"]);
    expect([await available("USDT_ERC20"), await available("USDT_BASE")]).toEqual(["146.5", "196"]);
    await auditAndExpect(server);
  });

  it("keeps a transfer below the entry's minimum as the operator's dust", async () => {
    await tokenMain.transfer(payer(mainnet, 1), address, usdt("4"));
    await mineBothAndScan(CONFIRMATIONS + 1);
    expect((await deposits("&status=dust")).map((d) => [d.amount, d.creditedAmount])).toEqual([["4", null]]);
    expect(await available("USDT_ERC20")).toBe("146.5");
    await auditAndExpect(server);
  });

  it("reverses a deposit whose block a reorganisation replaced, with deposit.reversed", async () => {
    const snapshot = await base.snapshot();
    await tokenBase.transfer(payer(base, 1), address, usdt("30"));
    await mineBothAndScan(1);
    expect((await deposits("&network=base&status=pending")).map((d) => d.amount)).toEqual(["30"]);
    await base.revert(snapshot);
    await mineBothAndScan(CONFIRMATIONS + 2);
    const reversed = await deposits("&status=reversed");
    expect(reversed.map((d) => [d.network, d.amount])).toEqual([["base", "30"]]);
    const events = await merchant(server, shop.apiKey, "GET", "/public/v1/events?type=deposit.reversed");
    expect(events.body.data).toHaveLength(1);
    expect(await available("USDT_BASE")).toBe("196");
  });

  it("holds a transfer to a deactivated address for the merchant", async () => {
    const patched = await merchant(server, shop.apiKey, "PATCH", `/public/v1/deposit-addresses/${addressId}`, {
      active: false,
    });
    expect([patched.status, patched.body.active]).toEqual([200, false]);
    await tokenMain.transfer(payer(mainnet, 1), address, usdt("10"));
    await mineBothAndScan(CONFIRMATIONS + 1);
    expect((await deposits("&status=held")).map((d) => d.amount)).toEqual(["10"]);
    expect(await available("USDT_ERC20")).toBe("146.5");
    await auditAndExpect(server);
  });
});
