// `npm run bench:scanner`: the scanner worker's cost per network (its passes as in production: scan, sweeps, flushes) on two local chains (anvil, chain ids 1 and 8453): JSON-RPC requests and bytes per block, and the delay from a payment's block to the invoice's status change.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import SQLite from "better-sqlite3";
import { type Hex, parseEther, parseUnits } from "viem";
import { listNetworks } from "../src/store/networks.ts";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "../test/support/chain.ts";
import { deployServiceFactory } from "../test/support/live.ts";
import { admin, createMerchant, merchant, startTestServer, type TestServer } from "../test/support/server.ts";

/** Blocks per measured stretch; each holds one token transfer and BUSY_TRANSFERS native transfers between payers. */
const BLOCKS = Number(process.env.BENCH_SCANNER_BLOCKS ?? "30");
const BUSY_TRANSFERS = Number(process.env.BENCH_SCANNER_TRANSFERS ?? "8");
/** Bound on scan passes while waiting for a status change. */
const MAX_PASSES = 20;

/**
 * Reads of the whole currency catalog (the SQLite store's one statement for it), counted on every
 * better-sqlite3 statement: the bench's server runs on a SQLite file in this process.
 */
const catalogReads = countCatalogReads();

function countCatalogReads(): { count: number } {
  const counted = { count: 0 };
  const probe = new SQLite(":memory:");
  const prototype = Object.getPrototypeOf(probe.prepare("select 1")) as { all: (...args: unknown[]) => unknown };
  probe.close();
  const all = prototype.all;
  prototype.all = function (this: { source: string }, ...args: unknown[]) {
    if (/from "currencies" order by/i.test(this.source)) counted.count++;
    return all.apply(this, args);
  };
  return counted;
}

interface Counter {
  requests: number;
  bytesIn: number;
  bytesOut: number;
}

/** A proxy in front of a node that counts what the scanner asks and receives. */
async function countingProxy(target: string): Promise<{ url: string; counter: Counter; close(): Promise<void> }> {
  const counter: Counter = { requests: 0, bytesIn: 0, bytesOut: 0 };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", async () => {
      const body = Buffer.concat(chunks);
      counter.requests++;
      counter.bytesOut += body.length;
      const answer = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body });
      const text = Buffer.from(await answer.arrayBuffer());
      counter.bytesIn += text.length;
      response.writeHead(answer.status, { "content-type": "application/json" });
      response.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    counter,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface Net {
  name: string;
  ticker: string;
  chain: LocalChain;
  token: TestToken;
  proxy: Awaited<ReturnType<typeof countingProxy>>;
}

/** One pass of the scanner worker as it runs in production: every network's scan, then its sweeps and flushes. */
async function passOnce(server: TestServer): Promise<void> {
  const loop = server.workers.loops.scanner;
  if (!loop) throw new Error("no scanner loop");
  await loop.runOnce();
}

/** The network's checkpoint: the last block its scanner recorded. */
async function scannedBlock(server: TestServer, name: string): Promise<bigint> {
  const network = (await listNetworks(server.ctx.store, server.ctx.box)).find((n) => n.name === name);
  if (!network) throw new Error(`no network ${name}`);
  return network.scannedBlock ?? -1n;
}

async function setUp(server: TestServer, name: string, chainId: number, ticker: string): Promise<Net> {
  const chain = await startLocalChain({ chainId });
  const token = await chain.deployToken({ symbol: ticker });
  const proxy = await countingProxy(chain.url);
  const put = await admin(server, "PUT", `/networks/${name}`, { chainId, rpcUrl: proxy.url, confirmations: 3 });
  if (put.status !== 200) throw new Error(put.text);
  // Live invoices take forwarder addresses once the factory is deployed there (product §24).
  await deployServiceFactory(server, chain, name);
  const currency = await admin(server, "PUT", `/currencies/${ticker}`, {
    fullName: ticker,
    network: name,
    contractAddress: token.address,
    type: "stablecoin",
    icon: "/icons/usdt.svg",
    iconDark: "/icons/usdt-dark.svg",
    internalTicker: `${ticker}_${name.toUpperCase()}`,
    decimals: 6,
    networkFee: "1",
    withdrawalMin: "10",
    withdrawalMax: "100000",
    rateUsd: "1",
  });
  if (currency.status !== 200) throw new Error(currency.text);
  await token.mint(chain.accounts[1] as Hex, parseUnits("100000", 6));
  await passOnce(server);
  return { name, ticker, chain, token, proxy };
}

/** Mines BLOCKS busy blocks, then scans them; answers requests and bytes per block. */
async function stretch(server: TestServer, net: Net) {
  const payer = net.chain.accounts[1] as Hex;
  const other = net.chain.accounts[2] as Hex;
  await net.chain.setAutomine(false);
  for (let b = 0; b < BLOCKS; b++) {
    await net.token.transfer(payer, other, 1n);
    for (let t = 0; t < BUSY_TRANSFERS; t++) await net.chain.sendEth(payer, other, 1n);
    await net.chain.mine(1);
  }
  await net.chain.setAutomine(true);
  const before = { ...net.proxy.counter };
  const from = await scannedBlock(server, net.name);
  const catalogBefore = catalogReads.count;
  let scanned = 0;
  let passes = 0;
  for (; passes < MAX_PASSES && scanned < BLOCKS; passes++) {
    await passOnce(server);
    scanned = Number((await scannedBlock(server, net.name)) - from);
  }
  const c = net.proxy.counter;
  return {
    blocks: scanned,
    catalogReadsPerPass: (catalogReads.count - catalogBefore) / passes,
    requestsPerBlock: (c.requests - before.requests) / scanned,
    bytesPerBlock: Math.round((c.bytesIn + c.bytesOut - before.bytesIn - before.bytesOut) / scanned),
  };
}

/** Pays an invoice and scans pass after pass until its status changes: ms from the mined block to the change. */
async function delay(server: TestServer, net: Net, apiKey: string, currency: string, pay: (to: Hex) => Promise<Hex>) {
  const created = await merchant(server, apiKey, "POST", "/public/v1/invoices/create", {
    currency,
    amount: currency === "ETH" ? "0.01" : "20",
  });
  if (created.status !== 200) throw new Error(created.text);
  const id = created.body.id as string;
  const row = await server.ctx.store.db
    .selectFrom("invoices")
    .select("deposit_address")
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
  await net.chain.waitForReceipt(await pay(row.deposit_address as Hex));
  const mined = performance.now();
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    await passOnce(server);
    const status = await server.ctx.store.db
      .selectFrom("invoices")
      .select("status")
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    if (status.status !== "pending") return Math.round(performance.now() - mined);
  }
  throw new Error("status did not change");
}

async function main(): Promise<void> {
  const server = await startTestServer({ env: { SERVICE_MODE: "live", WALLET_MNEMONIC: SERVICE_MNEMONIC } });
  const nets = [await setUp(server, "ethereum", 1, "USDT"), await setUp(server, "base", 8453, "USDB")];
  try {
    const shop = await createMerchant(server, { feePercent: "0" });
    const lines: string[] = [];
    for (const net of nets) {
      const payer = net.chain.accounts[1] as Hex;
      const tokens = await stretch(server, net);
      const tokenDelay = await delay(server, net, shop.apiKey, net.ticker, (to) =>
        net.token.transfer(payer, to, parseUnits("20", 6)),
      );
      lines.push(
        `${net.name} (chain ${net.chain.chainId}), token invoices only: ${tokens.requestsPerBlock.toFixed(2)} requests/block, ${tokens.bytesPerBlock} bytes/block, ${tokens.catalogReadsPerPass.toFixed(1)} catalog reads/pass (2 networks); block → status ${tokenDelay} ms`,
      );
      if (net.name === "ethereum") {
        // An open native-coin invoice makes the scanner read block bodies on its network.
        const ethDelay = await delay(server, net, shop.apiKey, "ETH", (to) =>
          net.chain.sendEth(payer, to, parseEther("0.01")),
        );
        const bodies = await stretch(server, net);
        lines.push(
          `${net.name} (chain ${net.chain.chainId}), a native-coin invoice open: ${bodies.requestsPerBlock.toFixed(2)} requests/block, ${bodies.bytesPerBlock} bytes/block, ${bodies.catalogReadsPerPass.toFixed(1)} catalog reads/pass (2 networks); block → status ${ethDelay} ms`,
        );
      }
    }
    process.stdout.write(
      `scanner bench: ${BLOCKS} blocks per stretch, each with 1 token transfer and ${BUSY_TRANSFERS} native transfers; delays are scanner passes (scan, sweeps, flushes) back to back (the worker adds up to its idle pause, SCAN_IDLE_MS)\n${lines.join("\n")}\n`,
    );
  } finally {
    await server.close();
    for (const net of nets) {
      await net.proxy.close();
      await net.chain.close();
    }
  }
}

await main();
