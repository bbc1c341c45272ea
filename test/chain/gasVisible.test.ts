// What a live operator sees before it hurts (issue 50): screening off is said at GET /admin/v1/screening; gas is visible before it runs out: a hot wallet drained of its native coin shows it in GET /admin/v1/networks and /metrics, the shipped alert rules page on it, a deposit waiting for a flush says so in its lastError and one warn line, and funding the wallet again lets the deposit move.
import { readFileSync } from "node:fs";
import { type Hex, parseEther, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flushNetwork } from "../../src/chain/flusher.ts";
import { listNetworks } from "../../src/store/networks.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import { forwarderInvoice } from "../support/forwarderInvoices.ts";
import { CONFIRMATIONS, liveMerchant, mineAndScan, payer, scan, startLiveServer, usdt } from "../support/live.ts";
import { admin, call, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  // A batch is never due by itself here: the test decides when the deposit is due (aged).
  server = await startLiveServer(chain, token, { env: { FLUSH_BATCH_SIZE: "100", FLUSH_MAX_WAIT_MS: "3600000" } });
  await token.mint(payer(chain, 1), usdt("100"));
  await scan(server);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

function hot(): Hex {
  const address = server.ctx.wallet?.hotAddress;
  if (!address) throw new Error("no wallet");
  return address;
}

/**
 * The hot wallet's coin set on the node. Draining it this way rather than by a transfer the test
 * signs keeps every nonce of the hot wallet the service's own (a foreign nonce is another test's
 * subject, test/chain/nonceGaps).
 */
async function setHotBalance(wei: bigint): Promise<void> {
  await chain.client.request({ method: "anvil_setBalance" as never, params: [hot(), toHex(wei)] as never });
}

async function gasOfNetwork(): Promise<Record<string, string> | null> {
  const listed = await admin(server, "GET", "/networks");
  expect(listed.status, listed.text).toBe(200);
  const entry = (listed.body as { network: string; gas: Record<string, string> | null }[]).find(
    (n) => n.network === "ethereum",
  );
  return entry?.gas ?? null;
}

async function gauges(): Promise<Map<string, number>> {
  const metrics = await call(server.baseUrl, "GET", "/metrics", {
    headers: { authorization: `Bearer ${server.adminToken}` },
  });
  const found = new Map<string, number>();
  for (const line of metrics.text.split("\n")) {
    const m = /^(payments_hot_wallet_[a-z_]+)\{network="([^"]+)"\} (\S+)$/.exec(line);
    if (m) found.set(`${m[1]}:${m[2]}`, Number(m[3]));
  }
  return found;
}

async function waitingDeposit(invoiceId: string) {
  const listed = await admin(server, "GET", "/flush-deposits?state=waiting&network=ethereum");
  expect(listed.status, listed.text).toBe(200);
  return (listed.body.items as { invoiceId: string; lastError: string | null }[]).find(
    (d) => d.invoiceId === invoiceId,
  );
}

/** One flush pass of ethereum as the scanner runs it, its log captured. */
async function flushPass(): Promise<{ level: string; fields: Record<string, unknown>; message: string }[]> {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = [];
  const line = (level: string) => (fields: object, message: string) =>
    lines.push({ level, fields: fields as Record<string, unknown>, message });
  const network = (await listNetworks(server.ctx.store, server.ctx.box)).find((n) => n.name === "ethereum");
  if (!network) throw new Error("no ethereum network");
  const ports = {
    store: server.ctx.store,
    wallet: server.ctx.wallet,
    batch: { size: 100, maxWaitMs: 3_600_000 },
    now: () => new Date(),
    log: { info: line("info"), warn: line("warn"), error: line("error") },
  };
  const client = server.ctx.chains.for(network.name, network.rpcUrl);
  await flushNetwork(ports, network, client, { now: new Date().toISOString() });
  return lines;
}

describe("the hot wallet's gas", () => {
  it("drained: shown in the network view and the metrics, paged by the alert rules, the waiting deposit says so; funded: the deposit moves", async () => {
    const m = await liveMerchant(server);
    const invoice = await forwarderInvoice(server, m.apiKey, { currency: "USDT", amount: "10" }, hot());
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), invoice.deposit_address, usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await waitingDeposit(invoice.id))?.lastError).toBeNull();

    // Drained: a millionth of a coin, short of one flush's or one payout's gas.
    await setHotBalance(10n ** 12n);
    const drained = await gasOfNetwork();
    expect(drained).toMatchObject({
      nativeBalance: "0.000001",
      nativeBalanceWei: "1000000000000",
      promisedWei: "0",
      freeWei: "1000000000000",
      flushesCovered: "0",
      payoutsCovered: "0",
    });
    expect(BigInt(drained?.maxFeePerGasWei ?? "0")).toBeGreaterThan(0n);
    const low = await gauges();
    expect(low.get("payments_hot_wallet_native_balance_wei:ethereum")).toBe(1e12);
    expect(low.get("payments_hot_wallet_gas_payouts_covered:ethereum")).toBe(0);
    expect(low.get("payments_hot_wallet_gas_flushes_covered:ethereum")).toBe(0);
    // The shipped rules page on what these gauges now say.
    const rules = readFileSync("docs/deploy/prometheus-alerts.yml", "utf8");
    expect(rules).toMatch(/- alert: PaymentsHotWalletGasLow\n\s+expr: payments_hot_wallet_gas_payouts_covered < \d+\n/);
    expect(rules).toMatch(
      /- alert: PaymentsFlushWaitingForGas\n\s+expr: payments_hot_wallet_gas_flushes_covered < 1 and on\(network\) payments_flush_waiting_deposits > 0\n/,
    );

    // Due now: the flush pass finds no gas for it, says so on the deposit and once in the log.
    const aged = new Date(Date.now() - 7_200_000).toISOString();
    await server.ctx.store.transaction((tx) =>
      tx.db.updateTable("flush_deposits").set({ created_at: aged }).where("invoice_id", "=", invoice.id).execute(),
    );
    const first = await flushPass();
    const warned = first.filter((l) => l.level === "warn");
    expect(warned).toEqual([
      {
        level: "warn",
        message: "flush: waiting for gas (fund the hot wallet)",
        fields: expect.objectContaining({ network: "ethereum", deposits: 1, freeWei: "1000000000000" }),
      },
    ]);
    const neededWei = BigInt(warned[0]?.fields.neededWei as string);
    expect(neededWei).toBeGreaterThan(10n ** 12n);
    const waiting = await waitingDeposit(invoice.id);
    expect(waiting?.lastError).toBe(
      `waiting for gas: the flush needs ${neededWei} wei of ethereum's native coin (${neededWei / BigInt(drained?.maxFeePerGasWei ?? "1")} gas at ${drained?.maxFeePerGasWei} wei), the hot wallet has 1000000000000 wei free`,
    );
    // The next pass still waits, without another line.
    expect((await flushPass()).filter((l) => l.level === "warn")).toEqual([]);
    expect((await waitingDeposit(invoice.id))?.lastError).toMatch(/^waiting for gas: /);

    // Funded again: the scanner's next pass flushes it, its lastError cleared, and the view shows the gas.
    await setHotBalance(parseEther("1"));
    await scan(server);
    const [row] = await server.ctx.store.db
      .selectFrom("flush_deposits")
      .select(["state", "last_error"])
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(row).toEqual({ state: "flushing", last_error: null });
    const funded = await gasOfNetwork();
    expect(BigInt(funded?.promisedWei ?? "0")).toBeGreaterThan(0n);
    expect(BigInt(funded?.flushesCovered ?? "0")).toBeGreaterThan(0n);
    expect((await gauges()).get("payments_hot_wallet_gas_payouts_covered:ethereum")).toBeGreaterThan(0);
    await mineAndScan(server, chain, CONFIRMATIONS);
    const [settled] = await server.ctx.store.db
      .selectFrom("flush_deposits")
      .select(["state", "last_error"])
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(settled).toEqual({ state: "flushed", last_error: null });
  });

  it("screening is not silently off: live mode with no list and no provider says so at GET /admin/v1/screening", async () => {
    const overview = await admin(server, "GET", "/screening");
    expect(overview.status, overview.text).toBe(200);
    expect(overview.body).toMatchObject({ list: null, provider: null });
    expect(overview.body.warning).toMatch(/^screening is off: no SCREENING_LIST and no SCREENING_PROVIDER_URL/);
  });
});
