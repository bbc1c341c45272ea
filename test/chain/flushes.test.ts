// Flushes replace sweeps for forwarder deposit addresses (product §24) on two real anvil chains (chain ids 1 and 8453): deposits reach the hot wallet in fewer transactions than deposits, no ETH is ever sent to a deposit address, the gas is split over the deposits in the ledger, a refused token retried.
import { type Hex, parseEther } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployFactory } from "../../src/chain/forwarders.ts";
import { promisedOf } from "../../src/chain/outbox.ts";
import {
  DEPLOYMENT_PROXY,
  DEPLOYMENT_PROXY_CODE,
  factoryAddress,
  forwarderAddress,
  forwarderId,
} from "../../src/domain/forwarders.ts";
import {
  CHAIN_MNEMONIC,
  type LocalChain,
  SERVICE_MNEMONIC,
  startLocalChain,
  type TestToken,
} from "../support/chain.ts";
import { forwarderInvoice } from "../support/forwarderInvoices.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  getInvoice,
  liveMerchant,
  outboxOf,
  payer,
  scan,
  startLiveServer,
  usdt,
  usdtEntry,
} from "../support/live.ts";
import { admin, call, type TestServer } from "../support/server.ts";
import { withdraw } from "../support/withdrawals.ts";

const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
const factory = factoryAddress(hot.address);
let mainnet: LocalChain;
let base: LocalChain;
let tokenMain: TestToken;
let tokenBase: TestToken;
let server: TestServer;
/** Every deposit address the tests made: no transaction of the hot wallet may send it ETH. */
const depositAddresses = new Set<string>();

/** The deterministic deployment proxy where anvil lacks it, then the factory through it; the hot wallet funded. */
async function prepare(chain: LocalChain): Promise<void> {
  const code = await chain.client.getCode({ address: DEPLOYMENT_PROXY });
  if (code === undefined || code === "0x") {
    await chain.client.request({
      method: "anvil_setCode" as "eth_chainId",
      params: [DEPLOYMENT_PROXY, DEPLOYMENT_PROXY_CODE] as unknown as undefined,
    });
  }
  await chain.waitForReceipt(await chain.sendEth(chain.accounts[2] as Hex, hot.address, parseEther("10")));
  const deployed = await deployFactory({ client: chain.client, signer: hot });
  if (!deployed.ok) throw new Error(`factory: ${deployed.error} ${deployed.detail ?? ""}`);
  expect(deployed.value.address).toBe(factory);
}

beforeAll(async () => {
  [mainnet, base] = await Promise.all([startLocalChain({ chainId: 1 }), startLocalChain({ chainId: 8453 })]);
  [tokenMain, tokenBase] = await Promise.all([mainnet.deployToken(), base.deployToken()]);
  await Promise.all([prepare(mainnet), prepare(base)]);
  // Batches of 3; the wait is long here, so only the batch size (or a test's aged deposit) starts a flush.
  server = await startLiveServer(mainnet, tokenMain, {
    env: { FLUSH_BATCH_SIZE: "3", FLUSH_MAX_WAIT_MS: "3600000" },
  });
  const network = await admin(server, "PUT", "/networks/base", {
    chainId: 8453,
    rpcUrl: base.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status, network.text).toBe(200);
  const entry = await admin(
    server,
    "PUT",
    "/currencies/USDT_BASE",
    usdtEntry(tokenBase, { ticker: "USDT", network: "base", internalTicker: "USDT_BASE", networkFee: "2" }),
  );
  expect(entry.status, entry.text).toBe(200);
  await tokenMain.mint(payer(mainnet, 1), usdt("1000"));
  await tokenBase.mint(payer(base, 1), usdt("1000"));
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

/** A flush is settled only once its block is the network's confirmations deep: the blocks that make it so. */
const deepen = () => mineBothAndScan(CONFIRMATIONS);

/** Every transaction the hot wallet sent on a chain, read block by block (bounded by the test's few blocks). */
async function hotTransactions(chain: LocalChain): Promise<{ to: string | null; value: bigint }[]> {
  const head = await chain.head();
  const sent: { to: string | null; value: bigint }[] = [];
  for (let n = 0n; n <= head; n++) {
    const block = await chain.client.getBlock({ blockNumber: n, includeTransactions: true });
    for (const t of block.transactions) {
      if (t.from.toLowerCase() === hot.address.toLowerCase()) sent.push({ to: t.to, value: t.value });
    }
  }
  return sent;
}

function flushRows(network: string) {
  return server.ctx.store.db
    .selectFrom("flushes")
    .selectAll()
    .where("network", "=", network)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
}

/** A flush's transactions in the outbox, oldest first (the first at its nonce, then its replacements). */
async function flushTxs(flushId: string) {
  return (await outboxOf(server, "flush")).filter((t) => t.purpose_id === flushId);
}

/** Makes a flush's newest transaction look older than the network's replacement delay. */
function overdue(flushId: string) {
  const old = new Date(Date.now() - 3_600_000).toISOString();
  return server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("hot_transactions")
      .set({ created_at: old })
      .where("purpose", "=", "flush")
      .where("purpose_id", "=", flushId)
      .execute(),
  );
}

/** Makes deposits look FLUSH_MAX_WAIT_MS old: the next pass flushes them without a full batch. */
function ageDeposits(invoiceIds: string[]) {
  const aged = new Date(Date.now() - 3_600_000).toISOString();
  return server.ctx.store.transaction((tx) =>
    tx.db.updateTable("flush_deposits").set({ created_at: aged }).where("invoice_id", "in", invoiceIds).execute(),
  );
}

function depositRows(invoiceIds: string[]) {
  return server.ctx.store.db
    .selectFrom("flush_deposits")
    .selectAll()
    .where("invoice_id", "in", invoiceIds)
    .orderBy("id")
    .execute();
}

/** The ledger's flush gas movements: one per deposit and flush, each naming the flush. */
async function flushGasPosted(flushIds: string[]): Promise<{ causeId: string; wei: bigint }[]> {
  const rows = await server.ctx.store.db
    .selectFrom("ledger_movements")
    .innerJoin("ledger_entries", "ledger_entries.movement_id", "ledger_movements.id")
    .select(["ledger_movements.cause_id as causeId", "ledger_entries.amount as amount", "ledger_entries.account"])
    .where("ledger_movements.cause", "=", "flush")
    .where("ledger_movements.cause_id", "in", flushIds)
    .where("ledger_entries.account", "=", "operator:network_fees")
    .execute();
  return rows.map((r) => ({ causeId: r.causeId, wei: -BigInt(r.amount) }));
}

/** What GET /admin/v1/networks and /metrics say of a network's deposits waiting for a flush. */
async function waitingShown(network: string) {
  const listed = await admin(server, "GET", "/networks");
  expect(listed.status, listed.text).toBe(200);
  const entry = (listed.body as { network: string; flushes: Record<string, unknown> }[]).find(
    (n) => n.network === network,
  );
  const metrics = await call(server.baseUrl, "GET", "/metrics", {
    headers: { authorization: `Bearer ${server.adminToken}` },
  });
  const gauge = (name: string) => {
    const series = `${name}{network="${network}"} `;
    return Number(
      metrics.text
        .split("\n")
        .find((l) => l.startsWith(series))
        ?.slice(series.length) ?? "NaN",
    );
  };
  return {
    api: entry?.flushes,
    waitingGauge: gauge("payments_flush_waiting_deposits"),
    ageGauge: gauge("payments_flush_oldest_waiting_age_seconds"),
  };
}

describe("flushes of forwarder deposit addresses", () => {
  it("moves three paid deposits per network to the hot wallet in one transaction each, no ETH to any deposit address, gas split in the ledger", async () => {
    const m = await liveMerchant(server);
    const invoices: Record<string, any>[] = [];
    for (let i = 0; i < 6; i++) {
      invoices.push(await forwarderInvoice(server, m.apiKey, { currency: "USDT", amount: "10" }, hot.address));
    }
    for (const invoice of invoices) depositAddresses.add(String(invoice.deposit_address).toLowerCase());
    // The forwarder's address: no code, no key; the same on both networks.
    expect(await mainnet.client.getCode({ address: invoices[0]?.deposit_address })).toBeUndefined();
    for (const [i, invoice] of invoices.entries()) {
      const [chain, token] = i < 3 ? [mainnet, tokenMain] : [base, tokenBase];
      await chain.waitForReceipt(await token.transfer(payer(chain, 1), invoice.deposit_address, usdt("10")));
    }
    await scan(server);
    // Fewer than FLUSH_BATCH_SIZE confirmed on each network (the payments' own blocks confirm the first ones): they wait, nothing signed.
    const early = await depositRows(invoices.map((i) => i.id));
    expect(early.length).toBeLessThan(6);
    expect(early.every((d) => d.state === "waiting")).toBe(true);
    expect([...(await flushRows("ethereum")), ...(await flushRows("base"))]).toEqual([]);
    await mineBothAndScan(CONFIRMATIONS);
    await deepen();
    for (const invoice of invoices) expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    const deposits = await depositRows(invoices.map((i) => i.id));
    expect(deposits.map((d) => [d.state, d.outcome, d.flushed_amount])).toEqual(
      Array.from({ length: 6 }, () => ["flushed", "Flushed", "10000000"]),
    );
    for (const [chain, token, network] of [
      [mainnet, tokenMain, "ethereum"],
      [base, tokenBase, "base"],
    ] as const) {
      // All three deposits in the hot wallet, none left at the forwarders.
      expect(await token.balanceOf(hot.address)).toBe(usdt("30"));
      for (const invoice of invoices) expect(await token.balanceOf(invoice.deposit_address)).toBe(0n);
      const flushes = await flushRows(network);
      expect(flushes.map((f) => [f.state, f.factory])).toEqual([["completed", factory.toLowerCase()]]);
      // The hot wallet sent the factory's deployment and one flush: fewer transactions than deposits, no ETH to deposits.
      const sent = await hotTransactions(chain);
      expect(sent.length).toBe(2);
      for (const t of sent) {
        expect(depositAddresses.has(String(t.to).toLowerCase())).toBe(false);
        expect(t.value).toBe(0n);
      }
      // Its gas, split exactly over its three deposits, each share posted naming the flush.
      const flush = flushes[0] as (typeof flushes)[number];
      const mine = deposits.filter((d) => d.flush_id === flush.id);
      expect(mine.length).toBe(3);
      expect(mine.reduce((sum, d) => sum + BigInt(d.gas_share), 0n)).toBe(BigInt(flush.gas_cost as string));
      const posted = await flushGasPosted([flush.id]);
      expect(posted.length).toBe(3);
      expect(posted.reduce((sum, p) => sum + p.wei, 0n)).toBe(BigInt(flush.gas_cost as string));
    }
    // No sweep, no gas funding: forwarders are flushed only.
    const sweeps = await server.ctx.store.db
      .selectFrom("sweeps")
      .select("id")
      .where(
        "invoice_id",
        "in",
        invoices.map((i) => i.id),
      )
      .execute();
    expect(sweeps).toEqual([]);
    await auditAndExpect(server);
  });

  it("sends a lone deposit once it waited FLUSH_MAX_WAIT_MS; a refused token comes back FlushFailed while the rest moves, and goes in a later flush", async () => {
    const m = await liveMerchant(server);
    const invoices = [
      await forwarderInvoice(server, m.apiKey, { currency: "USDT_ERC20", amount: "5" }, hot.address),
      await forwarderInvoice(server, m.apiKey, { currency: "USDT_ERC20", amount: "7" }, hot.address),
    ];
    for (const invoice of invoices) depositAddresses.add(String(invoice.deposit_address).toLowerCase());
    const [blocked, open] = invoices as [Record<string, any>, Record<string, any>];
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), blocked.deposit_address, usdt("5")));
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), open.deposit_address, usdt("7")));
    // The token refuses to move the first forwarder's balance (a blocklist, a paused token).
    await mainnet.waitForReceipt(await tokenMain.setBlocked(blocked.deposit_address, true));
    await mineBothAndScan(CONFIRMATIONS);
    const before = await flushRows("ethereum");
    // Two waiting, fewer than the batch size, and young: no flush.
    expect((await depositRows([blocked.id, open.id])).map((d) => d.state)).toEqual(["waiting", "waiting"]);
    // The operator sees them waiting, and since when.
    const shown = await waitingShown("ethereum");
    expect([shown.api?.waitingDeposits, shown.api?.failedDeposits, shown.waitingGauge]).toEqual([2, 0, 2]);
    expect(typeof shown.api?.oldestWaitingSince).toBe("string");
    expect(shown.ageGauge).toBeGreaterThanOrEqual(0);
    const aged = new Date(Date.now() - 3_600_000).toISOString();
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("flush_deposits")
        .set({ created_at: aged })
        .where("invoice_id", "in", [blocked.id, open.id])
        .execute(),
    );
    const hotBefore = await tokenMain.balanceOf(hot.address);
    await mineBothAndScan(1);
    await deepen();
    const after = await flushRows("ethereum");
    expect(after.length).toBe(before.length + 1);
    const failedFlush = after[after.length - 1] as (typeof after)[number];
    expect(failedFlush.state).toBe("completed");
    const byInvoice = async () =>
      new Map((await depositRows([blocked.id, open.id])).map((d) => [d.invoice_id, d] as const));
    let rows = await byInvoice();
    expect([rows.get(open.id)?.state, rows.get(open.id)?.outcome]).toEqual(["flushed", "Flushed"]);
    expect([rows.get(blocked.id)?.state, rows.get(blocked.id)?.outcome, rows.get(blocked.id)?.attempts]).toEqual([
      "waiting",
      "FlushFailed",
      1,
    ]);
    expect(await tokenMain.balanceOf(hot.address)).toBe(hotBefore + usdt("7"));
    expect(await tokenMain.balanceOf(blocked.deposit_address)).toBe(usdt("5"));
    // The failed flush's gas is split over both of its deposits, the refused one included.
    const gas = BigInt(failedFlush.gas_cost as string);
    expect(BigInt(rows.get(open.id)?.gas_share ?? "0") + BigInt(rows.get(blocked.id)?.gas_share ?? "0")).toBe(gas);
    // It backs off before another batch: the next passes leave it waiting.
    await mineBothAndScan(1);
    expect((await flushRows("ethereum")).length).toBe(before.length + 1);
    expect((await byInvoice()).get(blocked.id)?.state).toBe("waiting");
    // Unblocked, and its pause over: it goes in the next flush (alone: it is past its wait).
    await mainnet.waitForReceipt(await tokenMain.setBlocked(blocked.deposit_address, false));
    await server.ctx.store.transaction((tx) =>
      tx.db.updateTable("flush_deposits").set({ next_attempt_at: aged }).where("invoice_id", "=", blocked.id).execute(),
    );
    await mineBothAndScan(1);
    await deepen();
    rows = await byInvoice();
    expect([rows.get(blocked.id)?.state, rows.get(blocked.id)?.outcome]).toEqual(["flushed", "Flushed"]);
    expect(await tokenMain.balanceOf(hot.address)).toBe(hotBefore + usdt("12"));
    const flushes = await flushRows("ethereum");
    expect(flushes.length).toBe(before.length + 2);
    const drained = await waitingShown("ethereum");
    expect([drained.api?.waitingDeposits, drained.api?.oldestWaitingSince, drained.waitingGauge]).toEqual([0, null, 0]);
    const posted = await flushGasPosted(flushes.slice(before.length).map((f) => f.id));
    expect(posted.length).toBe(3);
    expect(posted.reduce((sum, p) => sum + p.wei, 0n)).toBe(
      flushes.slice(before.length).reduce((sum, f) => sum + BigInt(f.gas_cost as string), 0n),
    );
    for (const t of await hotTransactions(mainnet)) {
      expect(depositAddresses.has(String(t.to).toLowerCase())).toBe(false);
      expect(t.value).toBe(0n);
    }
    await auditAndExpect(server);
  });

  it("broadcasts a refused flush again, replaces a stuck one at its nonce with a higher fee, and settles the one mined", async () => {
    const m = await liveMerchant(server);
    const invoices: Record<string, any>[] = [];
    for (let i = 0; i < 3; i++) {
      invoices.push(await forwarderInvoice(server, m.apiKey, { currency: "USDT_BASE", amount: "3" }, hot.address));
    }
    for (const invoice of invoices) depositAddresses.add(String(invoice.deposit_address).toLowerCase());
    for (const invoice of invoices) {
      await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), invoice.deposit_address, usdt("3")));
    }
    const before = await flushRows("base");
    const nonceBefore = await base.client.getTransactionCount({ address: hot.address });
    const hotBefore = await tokenBase.balanceOf(hot.address);
    // The node refuses the flush's first broadcast: it is stored all the same, and nothing reached the chain.
    base.setFault("refuse_broadcast");
    try {
      await mineBothAndScan(CONFIRMATIONS);
    } finally {
      base.setFault("none");
    }
    let flushes = await flushRows("base");
    expect(flushes.length).toBe(before.length + 1);
    const flush = flushes[flushes.length - 1] as (typeof flushes)[number];
    const [first] = await flushTxs(flush.id);
    if (!first) throw new Error("no flush transaction stored");
    expect([flush.state, first.nonce, first.state]).toEqual(["signed", nonceBefore, "signed"]);
    expect(await base.client.getTransactionCount({ address: hot.address, blockTag: "pending" })).toBe(nonceBefore);
    // Broadcast again on the next pass; the chain does not mine it (a fee too low, a full block).
    await base.setAutomine(false);
    try {
      await scan(server);
      expect(await base.client.getTransactionCount({ address: hot.address, blockTag: "pending" })).toBe(
        nonceBefore + 1,
      );
      // Overdue (the network's replacement delay passed): replaced at its nonce with a higher fee, the first kept.
      await overdue(flush.id);
      await scan(server);
      flushes = await flushRows("base");
      const replaced = flushes.find((f) => f.id === flush.id) as (typeof flushes)[number];
      expect(replaced.state).toBe("signed");
      const txs = await flushTxs(flush.id);
      expect(txs.map((t) => [t.raw, t.state])).toEqual([
        [first.raw, "broadcast"],
        [expect.any(String), "broadcast"],
      ]);
      const replacement = txs[1] as (typeof txs)[number];
      expect([replacement.nonce, replacement.replaces_id]).toEqual([nonceBefore, first.id]);
      expect(replacement.hash).not.toBe(first.hash);
      expect(BigInt(replacement.max_fee_per_gas)).toBeGreaterThan(BigInt(first.max_fee_per_gas));
      // While it is out, the payout planner counts its most costly gas as promised (the current transaction).
      const promised = await promisedOf(server.ctx.store, "base");
      expect(promised.native).toBe(BigInt(replacement.gas_limit) * BigInt(replacement.max_fee_per_gas));
      await base.mine(1);
    } finally {
      await base.setAutomine(true);
    }
    await mineBothAndScan(1);
    await deepen();
    flushes = await flushRows("base");
    const settled = flushes.find((f) => f.id === flush.id) as (typeof flushes)[number];
    expect(settled.state).toBe("completed");
    // The replacement was mined, the first never: one nonce used, every deposit moved once.
    expect((await flushTxs(flush.id)).map((t) => t.state)).toEqual(["replaced", "confirmed"]);
    expect(await base.client.getTransactionCount({ address: hot.address })).toBe(nonceBefore + 1);
    expect(await tokenBase.balanceOf(hot.address)).toBe(hotBefore + usdt("9"));
    expect((await depositRows(invoices.map((i) => i.id))).map((d) => d.state)).toEqual([
      "flushed",
      "flushed",
      "flushed",
    ]);
    const posted = await flushGasPosted([flush.id]);
    expect(posted.reduce((sum, p) => sum + p.wei, 0n)).toBe(BigInt(settled.gas_cost as string));
    for (const t of await hotTransactions(base)) {
      expect(depositAddresses.has(String(t.to).toLowerCase())).toBe(false);
      expect(t.value).toBe(0n);
    }
    await auditAndExpect(server);
  });

  it("records each deposit's own amount when two deposits at one forwarder go in one flush", async () => {
    const m = await liveMerchant(server);
    const invoice = await forwarderInvoice(server, m.apiKey, { currency: "USDT_ERC20", amount: "243" }, hot.address);
    depositAddresses.add(String(invoice.deposit_address).toLowerCase());
    // Paid in two parts: two confirmed payments, two deposits at one forwarder, one Flushed entry of 243.
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), invoice.deposit_address, usdt("90")));
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), invoice.deposit_address, usdt("153")));
    await mineBothAndScan(CONFIRMATIONS);
    await ageDeposits([invoice.id]);
    const hotBefore = await tokenMain.balanceOf(hot.address);
    await mineBothAndScan(1);
    await deepen();
    const deposits = await depositRows([invoice.id]);
    expect(deposits.map((d) => [d.state, d.amount, d.flushed_amount]).sort()).toEqual([
      ["flushed", "153000000", "153000000"],
      ["flushed", "90000000", "90000000"],
    ]);
    expect(await tokenMain.balanceOf(hot.address)).toBe(hotBefore + usdt("243"));
    await auditAndExpect(server);
  });

  it("sends a flush again whose block was reorganised away: the deposit reaches the hot wallet once, nonces stay contiguous, a later withdrawal lands", async () => {
    const m = await liveMerchant(server);
    const invoice = await forwarderInvoice(server, m.apiKey, { currency: "USDT_BASE", amount: "20" }, hot.address);
    depositAddresses.add(String(invoice.deposit_address).toLowerCase());
    await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), invoice.deposit_address, usdt("20")));
    await mineBothAndScan(CONFIRMATIONS);
    expect((await depositRows([invoice.id])).map((d) => d.state)).toEqual(["waiting"]);
    const before = await flushRows("base");
    const hotBefore = await tokenBase.balanceOf(hot.address);
    await ageDeposits([invoice.id]);
    // The flush is signed, broadcast and mined in the block after this point...
    const beforeFlush = await base.snapshot();
    await scan(server);
    const [flush] = (await flushRows("base")).slice(before.length);
    if (!flush) throw new Error("no flush signed");
    const [sent] = await flushTxs(flush.id);
    await base.waitForReceipt(sent?.hash as Hex);
    expect(await tokenBase.balanceOf(invoice.deposit_address)).toBe(0n);
    // ...and seen there, less than the network's confirmations deep: not settled.
    await mineBothAndScan(CONFIRMATIONS - 2);
    expect((await flushRows("base")).find((f) => f.id === flush.id)?.state).toBe("signed");
    expect((await depositRows([invoice.id])).map((d) => d.state)).toEqual(["flushing"]);
    // Its block is reorganised away and the node forgets the transaction: the deposit is back at the forwarder.
    await base.revert(beforeFlush);
    await base.dropPending();
    expect(await tokenBase.balanceOf(invoice.deposit_address)).toBe(usdt("20"));
    // The stored flush is broadcast again, mined, and settled once deep.
    await mineBothAndScan(1);
    await deepen();
    expect((await flushRows("base")).slice(before.length).map((f) => [f.id, f.state])).toEqual([
      [flush.id, "completed"],
    ]);
    // The same stored bytes, sent again: one transaction of the flush, confirmed.
    expect((await flushTxs(flush.id)).map((t) => [t.hash, t.state])).toEqual([[sent?.hash, "confirmed"]]);
    expect((await depositRows([invoice.id])).map((d) => [d.state, d.flushed_amount])).toEqual([
      ["flushed", "20000000"],
    ]);
    expect(await tokenBase.balanceOf(invoice.deposit_address)).toBe(0n);
    expect(await tokenBase.balanceOf(hot.address)).toBe(hotBefore + usdt("20"));
    // Nonces contiguous: every nonce the service took is mined, none left as a gap.
    const network = await server.ctx.store.db
      .selectFrom("networks")
      .select(["hot_nonce", "nonce_gaps"])
      .where("name", "=", "base")
      .executeTakeFirstOrThrow();
    expect(Number(network.hot_nonce)).toBe(await base.client.getTransactionCount({ address: hot.address }));
    expect(Number(network.nonce_gaps)).toBe(0);
    // A later withdrawal from the hot wallet lands (its nonce is the next one).
    const dest = `0x${"0b".repeat(19)}e2` as Hex;
    const method = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
      currency: "USDT_BASE",
      address: dest,
    });
    expect(method.status, method.text).toBe(200);
    const w = await withdraw(server, { ...m, methodId: method.body.id as number }, { currency: "USDT", amount: "10" });
    expect(w.answer.status, w.answer.text).toBe(200);
    const payouts = server.workers.loops.chainPayouts;
    if (!payouts) throw new Error("no chain payout loop");
    for (let round = 0; round < 10 && (await tokenBase.balanceOf(dest)) === 0n; round++) {
      await payouts.runOnce();
      await base.mine(1);
    }
    expect(await tokenBase.balanceOf(dest)).toBe(usdt("10"));
    await auditAndExpect(server);
  });

  it("flushes an invoice whose address the version-1 factory handed out, by that factory, to the hot wallet", async () => {
    // Version 1 of the hot wallet's factory, deployed (a stranger pays) as it was before version 2.
    const stranger = mnemonicToAccount(CHAIN_MNEMONIC, { addressIndex: 4 });
    const v1 = await deployFactory({ client: mainnet.client, signer: stranger, owner: hot.address, version: 1 });
    if (!v1.ok) throw new Error(`factory v1: ${v1.error} ${v1.detail ?? ""}`);
    const v1Factory = factoryAddress(hot.address, 1).toLowerCase();
    const m = await liveMerchant(server);
    const invoice = await forwarderInvoice(server, m.apiKey, { currency: "USDT_ERC20", amount: "11" }, hot.address);
    // The invoice as version 1 made it: its address and factory recorded before the upgrade.
    const old = forwarderAddress(hot.address, forwarderId(invoice.id), 1);
    expect(old).not.toBe(invoice.deposit_address);
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("invoices")
        .set({ deposit_address: old, deposit_factory: v1Factory })
        .where("id", "=", invoice.id)
        .execute(),
    );
    depositAddresses.add(old.toLowerCase());
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), old, usdt("11")));
    await mineBothAndScan(CONFIRMATIONS);
    await ageDeposits([invoice.id]);
    const hotBefore = await tokenMain.balanceOf(hot.address);
    const before = (await flushRows("ethereum")).length;
    await mineBothAndScan(1);
    await deepen();
    expect((await depositRows([invoice.id])).map((d) => [d.factory, d.state, d.flushed_amount])).toEqual([
      [v1Factory, "flushed", "11000000"],
    ]);
    expect((await flushRows("ethereum")).slice(before).map((f) => [f.factory, f.state])).toEqual([
      [v1Factory, "completed"],
    ]);
    expect(await tokenMain.balanceOf(old)).toBe(0n);
    expect(await tokenMain.balanceOf(hot.address)).toBe(hotBefore + usdt("11"));
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    await auditAndExpect(server);
  });
});
