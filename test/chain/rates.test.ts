// Live rates and fixed quotes (product §22) against a Chainlink-style feed on the local chain: an invoice settles, refunds and values its payments at its creation rate; a stale, zero, reverting or unreachable feed makes nothing.
import { parseEther } from "viem";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "../support/chain.ts";
import { balances } from "../support/invoices.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  configureChain,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  mineAndScan,
  payer,
  scan,
} from "../support/live.ts";
import { deployPriceFeed, nowSeconds, type PriceFeed } from "../support/priceFeed.ts";
import { adjust, refundFiat } from "../support/refunds.ts";
import { admin, call, expectProblem, merchant, startTestServer, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
let feed: PriceFeed;

/** 2500.12345678 USD per ETH with the feed's 8 decimals. */
const CREATION_ANSWER = 250_012_345_678n;
const MOVED_ANSWER = 400_000_000_000n;
const MAX_AGE_SECONDS = 3600;

function ethEntry(rateSource?: Record<string, unknown>) {
  return {
    fullName: "Ether",
    network: "ethereum",
    contractAddress: null,
    type: "token",
    icon: "/icons/eth.svg",
    iconDark: "/icons/eth-dark.svg",
    internalTicker: "ETH",
    decimals: 18,
    networkFee: "0.0005",
    withdrawalMin: "0.01",
    withdrawalMax: "100",
    rateUsd: "3000",
    ...(rateSource ? { rateSource } : {}),
  };
}

function chainlinkSource() {
  return { kind: "chainlink", network: "ethereum", feed: feed.address, maxAgeSeconds: MAX_AGE_SECONDS };
}

async function invoiceCount(): Promise<number> {
  const row = await server.ctx.store.db
    .selectFrom("invoices")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function scrape(): Promise<string> {
  const answer = await call(server.baseUrl, "GET", "/metrics", {
    headers: { authorization: `Bearer ${server.adminToken}` },
  });
  expect(answer.status).toBe(200);
  return answer.text;
}

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  // Every read asks the node (no sharing window), and a node slower than 1.5 s is given up on.
  server = await startTestServer({
    env: {
      SERVICE_MODE: "live",
      WALLET_MNEMONIC: SERVICE_MNEMONIC,
      RATE_CACHE_MS: "0",
      RATE_READ_TIMEOUT_MS: "1500",
    },
  });
  await configureChain(server, chain, token);
  feed = await deployPriceFeed(chain, { decimals: 8, answer: CREATION_ANSWER });
  const put = await admin(server, "PUT", "/currencies/ETH", ethEntry(chainlinkSource()));
  expect(put.status, put.text).toBe(200);
  expect(put.body.rateSource).toEqual(chainlinkSource());
  await scan(server);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

beforeEach(async () => {
  chain.setFault("none");
  await feed.setReverting(false);
  await feed.setRound(CREATION_ANSWER, nowSeconds());
});

describe("a quote fixed at creation", () => {
  it("settles an autoconverting invoice at its creation rate after the feed moved, and values its payment at both rates", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.5", autoconvert: "USDT" });
    // GetInvoice answers exactly the interface's fields; the quote is its own extension read.
    expect(Object.keys(await getInvoice(server, m.apiKey, invoice.id))).not.toContain("rates");
    const quote = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoice.id}/quote`);
    expect(quote.status).toBe(200);
    expect(quote.body.fixed).toBe(true);
    expect(quote.body.rates.map((r: Record<string, unknown>) => [r.currency, r.rate_usd, r.source])).toEqual([
      ["ETH", "2500.12345678", "chainlink"],
      ["USDT", "1", "static"],
    ]);

    await feed.setRound(MOVED_ANSWER, nowSeconds());
    // The rate worker reads the feed again: its new reading is what "live" means at confirmation.
    await server.workers.loops.rates?.runOnce();

    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), address, parseEther("0.5")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    // merchant_receive_amount 0.4995 ETH × 2500.12345678 = 1248.81166666161 → 1248.811667 (half up, once);
    // at the moved rate it would have been 1998.
    expect((await balances(server, m.id)).USDT).toBe("1248.811667");

    const after = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoice.id}/quote`);
    expect(after.body.rates[0].rate_usd).toBe("2500.12345678");
    expect(after.body.payments).toHaveLength(1);
    expect(after.body.payments[0]).toMatchObject({
      amount: "0.5",
      confirmed: true,
      value_usd: "1250.06",
      live_rate_usd: "4000",
      live_value_usd: "2000",
    });
    await auditAndExpect(server);
  });

  it("refunds a crypto invoice in fiat at its creation rate", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.5", autoconvert: "USD" });
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), address, parseEther("0.5")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    // Credited 0.4995 ETH at 2500.12345678 = 1248.81 USD; the refund returns what was paid.
    expect((await balances(server, m.id)).USD).toBe("1248.81");
    await adjust(server, m.id, "USD", "10");
    await feed.setRound(MOVED_ANSWER, nowSeconds());
    const { answer } = await refundFiat(server, m, { invoiceId: invoice.id });
    expect(answer.status, answer.text).toBe(200);
    // paid_amount 0.5 ETH at the fixed 2500.12345678 = 1250.06172839 → 1250.06 USD (at the moved rate: 2000).
    expect(answer.body.request).toMatchObject({ currency: "USD", amount: "1250.06" });
    expect((await balances(server, m.id)).USD).toBe("8.75");
    await auditAndExpect(server);
  });
});

describe("a rate that cannot be used", () => {
  it("answers 503 rate_unavailable with Retry-After for a stale feed and makes nothing; a fresh round creates again", async () => {
    const m = await liveMerchant(server);
    await feed.setRound(CREATION_ANSWER, nowSeconds() - MAX_AGE_SECONDS - 600);
    const before = await invoiceCount();
    const refused = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "ETH",
      amount: "0.1",
    });
    expectProblem(refused, 503, "rate_unavailable");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const estimate = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/estimateFees", {
      currency: "ETH",
      amount: "0.1",
    });
    expectProblem(estimate, 503, "rate_unavailable");
    expect(estimate.headers.get("retry-after")).not.toBeNull();
    // Settling into a currency with a stale rate is refused the same way.
    expectProblem(
      await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
        currency: "USDT",
        amount: "10",
        autoconvert: "ETH",
      }),
      503,
      "rate_unavailable",
    );
    expect(await invoiceCount()).toBe(before);
    // A bad body is still its own 400, before any rate is read.
    expectProblem(
      await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", { currency: "ETH", amount: "-1" }),
      400,
      "amount_negative",
    );

    await feed.setRound(CREATION_ANSWER, nowSeconds());
    const made = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.1" });
    expect(made.status).toBe("pending");
    expect(await invoiceCount()).toBe(before + 1);
    const metrics = await scrape();
    expect(metrics).toMatch(
      /payments_rate_feed_read_failures_total\{currency="ETH",network="ethereum",feed="0x[0-9a-fA-F]{40}",reason="rate_stale"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /payments_rate_feed_age_seconds\{currency="ETH",network="ethereum",feed="0x[0-9a-fA-F]{40}"\} \d/,
    );
  });

  it.each([
    ["answers zero", async () => feed.setRound(0n, nowSeconds()), "rate_not_positive"],
    ["answers a negative price", async () => feed.setRound(-5n, nowSeconds()), "rate_not_positive"],
    ["reverts", async () => feed.setReverting(true), "feed_reverted"],
  ])("refuses a feed that %s", async (_name, breakFeed, reason) => {
    const m = await liveMerchant(server);
    await breakFeed();
    const before = await invoiceCount();
    const refused = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "ETH",
      amount: "0.1",
    });
    expectProblem(refused, 503, "rate_unavailable");
    expect(await invoiceCount()).toBe(before);
    expect(await scrape()).toMatch(
      new RegExp(`payments_rate_feed_read_failures_total\\{currency="ETH"[^}]*reason="${reason}"\\} [1-9]`),
    );
  });

  it("gives up on a node that does not answer within RATE_READ_TIMEOUT_MS", async () => {
    const m = await liveMerchant(server);
    chain.setFault("hang");
    const refused = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "ETH",
      amount: "0.1",
    });
    chain.setFault("none");
    expectProblem(refused, 503, "rate_unavailable");
    expect(await scrape()).toMatch(
      /payments_rate_feed_read_failures_total\{currency="ETH"[^}]*reason="node_timeout"\} [1-9]/,
    );
  });
});

describe("static rates and the operator's view", () => {
  it("a currency configured without rateSource quotes its rateUsd as before, whatever the feeds do", async () => {
    const m = await liveMerchant(server);
    await feed.setRound(CREATION_ANSWER, nowSeconds() - MAX_AGE_SECONDS - 600);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "25" });
    const quote = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoice.id}/quote`);
    expect(quote.body.rates).toEqual([{ currency: "USDT", rate_usd: "1", source: "static", updated_at: null }]);
    const list = await admin(server, "GET", "/currencies");
    const usdt = list.body.find((c: { ticker: string }) => c.ticker === "USDT");
    expect(usdt.rateSource).toEqual({ kind: "static" });
    expect(usdt.lastRate).toEqual({ rateUsd: "1", source: "static", updatedAt: null, readAt: null });
    const eth = list.body.find((c: { ticker: string }) => c.ticker === "ETH");
    expect(eth.rateSource).toEqual(chainlinkSource());
    expect(eth.lastRate).toMatchObject({ rateUsd: "2500.12345678", source: "chainlink" });
  });

  it("refuses a rate source on a network that is not configured, or with a bad feed address, and keeps the entry", async () => {
    expectProblem(
      await admin(server, "PUT", "/currencies/ETH", ethEntry({ ...chainlinkSource(), network: "polygon" })),
      400,
      "invalid_rate_source",
    );
    expectProblem(
      await admin(server, "PUT", "/currencies/ETH", ethEntry({ ...chainlinkSource(), feed: "0x1234" })),
      400,
      "invalid_rate_source",
    );
    expectProblem(
      await admin(server, "PUT", "/currencies/ETH", ethEntry({ ...chainlinkSource(), maxAgeSeconds: 0 })),
      400,
      "validation_failed",
    );
    const list = await admin(server, "GET", "/currencies");
    expect(list.body.find((c: { ticker: string }) => c.ticker === "ETH").rateSource).toEqual(chainlinkSource());
  });
});
