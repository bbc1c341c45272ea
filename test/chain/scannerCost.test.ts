// What the scanner asks the node (issue 32 item 6): block headers only unless a native-coin invoice waits on the network, token transfers by eth_getLogs filtered by the catalog's contracts.
import { parseEther } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcChainClient } from "../../src/chain/rpc.ts";
import type { ChainClient, Hex } from "../../src/domain/chain.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import {
  auditAndExpect,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  payer,
  scan,
  startLiveServer,
  usdt,
} from "../support/live.ts";
import type { TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
/** Every block read (true: with transactions) and every contract list eth_getLogs was filtered by. */
const blockReads: boolean[] = [];
const logFilters: string[][] = [];

function counting(url: string): ChainClient {
  const inner = rpcChainClient(url, { timeoutMs: 1500 });
  return {
    ...inner,
    block: (number, options) => {
      blockReads.push(options?.withTransactions !== false);
      return inner.block(number, options);
    },
    transferLogs: (contracts, from, to) => {
      logFilters.push(contracts.map((c) => c.toLowerCase()));
      return inner.transferLogs(contracts, from, to);
    },
  };
}

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  server = await startLiveServer(chain, token, { chainClientFactory: counting });
  await token.mint(payer(chain, 1), usdt("1000"));
  await scan(server);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

describe("the scanner's node calls", () => {
  it("read headers only while no native-coin invoice is open, and filter logs by the catalog's contracts", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    // Busy blocks: native transfers between payers the scanner has no reason to read.
    await chain.sendEth(payer(chain, 2), payer(chain, 3), 1n);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("10")));
    blockReads.length = 0;
    logFilters.length = 0;
    await scan(server);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("processing");
    expect(blockReads.length).toBeGreaterThan(0);
    expect(blockReads.every((withTransactions) => !withTransactions)).toBe(true);
    // USDT (the test token) and the default catalog's USDC: the tokens configured on this network.
    const usdc = "0xA0b86991c6218b36c1d19D4a2E9Eb0cE3606eB48".toLowerCase();
    expect(logFilters.map((contracts) => [...contracts].sort())).toEqual([[token.address.toLowerCase(), usdc].sort()]);
    await auditAndExpect(server);
  });

  it("read block bodies once a native-coin invoice is open, and see its payment", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.1" });
    await chain.waitForReceipt(
      await chain.sendEth(payer(chain, 2), (await depositOf(server, invoice.id)) as Hex, parseEther("0.1")),
    );
    blockReads.length = 0;
    await scan(server);
    expect(blockReads.some((withTransactions) => withTransactions)).toBe(true);
    const seen = await getInvoice(server, m.apiKey, invoice.id);
    expect([seen.status, seen.paid_amount]).toEqual(["processing", "0.1"]);
    await auditAndExpect(server);
  });
});
