// What the scanner asks the node (issue 32 item 6): block headers only unless a native-coin invoice waits on the network, token transfers by eth_getLogs filtered by the catalog's contracts; and the catalog read once per pass (issue 51 item 3).
import { parseEther } from "viem";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { rpcChainClient } from "../../src/chain/rpc.ts";
import type { ChainClient, Hex } from "../../src/domain/chain.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  payer,
  scan,
  startLiveServer,
  usdt,
  usdtEntry,
} from "../support/live.ts";
import { admin, type TestServer } from "../support/server.ts";

/** Reads of the whole currency catalog (the store's listCurrencies), counted through the module every caller imports. */
const catalogReads = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../src/store/currencies.ts", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../src/store/currencies.ts")>();
  return {
    ...actual,
    listCurrencies: (...args: Parameters<typeof actual.listCurrencies>) => {
      catalogReads.count++;
      return actual.listCurrencies(...args);
    },
  };
});

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
/** Every block read (true: with transactions) and every contract list eth_getLogs was filtered by. */
const blockReads: boolean[] = [];
const logFilters: string[][] = [];
/** eth_blockNumber calls. */
const headReads = { count: 0 };

function counting(url: string): ChainClient {
  const inner = rpcChainClient(url, { timeoutMs: 1500 });
  return {
    ...inner,
    headBlockNumber: () => {
      headReads.count++;
      return inner.headBlockNumber();
    },
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
  // A flush per forwarder deposit: the pass after a payment follows one.
  server = await startLiveServer(chain, token, { chainClientFactory: counting, env: { FLUSH_BATCH_SIZE: "1" } });
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

  it("read the catalog once per pass for its scan, sweeps and flushes, and see a token added meanwhile at the next pass", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    // The hot wallet pays the flush's gas.
    await chain.waitForReceipt(
      await chain.sendEth(payer(chain, 2), server.ctx.wallet?.hotAddress as Hex, parseEther("1")),
    );
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("10")));
    await chain.mine(CONFIRMATIONS);
    catalogReads.count = 0;
    // One pass: the payment is read, confirmed at depth and queued for a flush; the sweeps and flushes run.
    await server.workers.loops.scanner?.runOnce();
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    expect(catalogReads.count).toBe(1);
    expect(await openFlushes()).toBe(1);
    // The operator adds a token while the service runs: the next pass reads its transfers.
    const added = "0x00000000000000000000000000000000000051a3";
    const put = await admin(server, "PUT", "/currencies/PASS", {
      ...usdtEntry(token, { contractAddress: added, internalTicker: "PASS_ERC20", fullName: "Pass token" }),
    });
    expect(put.status).toBe(200);
    await chain.mine(1);
    logFilters.length = 0;
    catalogReads.count = 0;
    headReads.count = 0;
    await server.workers.loops.scanner?.runOnce();
    expect(logFilters.flat()).toContain(added);
    expect(catalogReads.count).toBe(1);
    // The flush in flight was followed with the head the scan read: eth_blockNumber once in the pass.
    expect(await openFlushes()).toBe(1);
    expect(headReads.count).toBe(1);
    await auditAndExpect(server);
  });
});

/** The hot wallet's flush transactions not yet settled. */
async function openFlushes(): Promise<number> {
  const rows = await server.ctx.store.db
    .selectFrom("hot_transactions")
    .select("id")
    .where("purpose", "=", "flush")
    .where("state", "in", ["signed", "broadcast", "dropped", "mined"])
    .execute();
  return rows.length;
}
