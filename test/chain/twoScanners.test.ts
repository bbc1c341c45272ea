import { parseEther } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chainPaymentSettler } from "../../src/app/recordChainPayment.ts";
import { scanNetwork } from "../../src/chain/scanner.ts";
import { sweepNetwork } from "../../src/chain/sweeper.ts";
import { findNetwork, type ScanLease, takeScanLease } from "../../src/store/networks.ts";
import { nowIso } from "../../src/store/store.ts";
import type { Loop } from "../../src/workers/loop.ts";
import { startScannerLoop } from "../../src/workers/scanner.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import { balances } from "../support/invoices.ts";
import {
  asLegacyDerivedInvoice,
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  outboxOf,
  payer,
  paymentRows,
  scan,
  startLiveServer,
  usdt,
} from "../support/live.ts";
import { createTestDatabase, storeKind, type TestDatabase, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let database: TestDatabase;
let first: TestServer;
/** The second instance (PostgreSQL), or the first again (SQLite). */
let second: TestServer;
let secondInstance: TestServer | null = null;
let secondScanner: Loop;

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  database = await createTestDatabase();
  first = await startLiveServer(chain, token, { database });
  if (storeKind() === "postgres") {
    secondInstance = await startLiveServer(chain, token, { database, configure: false });
    second = secondInstance;
    secondScanner = secondInstance.workers.loops.scanner as Loop;
  } else {
    second = first;
    secondScanner = startScannerLoop(first.ctx, first.app.log, false);
  }
  await token.mint(payer(chain, 1), usdt("1000"));
}, 60_000);

afterAll(async () => {
  await first?.close();
  await secondInstance?.close();
  if (!secondInstance) await secondScanner?.stop();
  await database?.drop();
  await chain?.close();
});

describe("two scanners on one database", () => {
  it("give invoices of both instances distinct deposit addresses", async () => {
    const m = await liveMerchant(first);
    const created = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        liveInvoice(i % 2 === 0 ? first : second, m.apiKey, { currency: "USDT", amount: "2" }),
      ),
    );
    const addresses = await Promise.all(created.map((invoice) => depositOf(first, invoice.id)));
    expect(new Set(addresses).size).toBe(6);
  });

  it("take turns by lease and count a payment once", async () => {
    const m = await liveMerchant(first);
    const invoice = await liveInvoice(second, m.apiKey, { currency: "USDT", amount: "10" });
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(first, invoice.id), usdt("10")));
    for (let round = 0; round < CONFIRMATIONS + 2; round++) {
      await Promise.all([scan(first), secondScanner.runOnce()]);
      await chain.mine(1);
    }
    await Promise.all([scan(first), secondScanner.runOnce()]);
    expect((await getInvoice(first, m.apiKey, invoice.id)).status).toBe("completed");
    expect((await balances(first, m.id)).USDT).toBe("9");
    const network = await first.ctx.store.db.selectFrom("networks").select("lease_owner").executeTakeFirstOrThrow();
    expect(network.lease_owner).not.toBeNull();
    await auditAndExpect(first);
  });

  it("count a payment once even when both scan the same blocks at the same time (no lease)", async () => {
    const m = await liveMerchant(first);
    const invoice = await liveInvoice(first, m.apiKey, { currency: "USDT", amount: "10" });
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(first, invoice.id), usdt("10")));
    await chain.mine(CONFIRMATIONS);
    // Both read the same checkpoint, then race to record the same blocks.
    const [a, b] = await Promise.all([
      findNetwork(first.ctx.store, first.ctx.box, "ethereum"),
      findNetwork(second.ctx.store, second.ctx.box, "ethereum"),
    ]);
    if (!a || !b) throw new Error("network missing");
    const outcomes = await Promise.allSettled([
      scanNetwork(
        first.ctx.store,
        a,
        first.ctx.chains.for("ethereum", a.rpcUrl),
        chainPaymentSettler(first.config.publicBaseUrl),
      ),
      scanNetwork(
        second.ctx.store,
        b,
        second.ctx.chains.for("ethereum", b.rpcUrl),
        chainPaymentSettler(second.config.publicBaseUrl),
      ),
    ]);
    expect(outcomes.some((o) => o.status === "fulfilled")).toBe(true);
    await scan(first);
    const rows = await first.ctx.store.db
      .selectFrom("invoice_payments")
      .selectAll()
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(rows).toHaveLength(1);
    expect((await getInvoice(first, m.apiKey, invoice.id)).status).toBe("completed");
    expect((await balances(first, m.id)).USDT).toBe("9");
    await auditAndExpect(first);
  });

  // Found by the seeded simulation (docs/simulation.md): a pass that read its position before another
  // pass's batch committed (that pass's transaction open across the lease's takeover) wrote over it;
  // the other pass's blocks were forgotten, and its payment from a fork reorganised away was later
  // confirmed. A batch now writes only on the checkpoint it read.
  it("a batch whose checkpoint another pass moved meanwhile writes nothing", async () => {
    const m = await liveMerchant(first);
    const invoice = await liveInvoice(first, m.apiKey, { currency: "USDT", amount: "10" });
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(first, invoice.id), usdt("10")));
    const stale = await findNetwork(second.ctx.store, second.ctx.box, "ethereum");
    if (!stale) throw new Error("network missing");
    await chain.mine(CONFIRMATIONS);
    // A pass of the first moves the checkpoint; directly, so whoever holds the lease (the second
    // instance's own loop, on PostgreSQL) cannot make it a pass that scans nothing.
    const current = await findNetwork(first.ctx.store, first.ctx.box, "ethereum");
    if (!current) throw new Error("network missing");
    await scanNetwork(
      first.ctx.store,
      current,
      first.ctx.chains.for("ethereum", current.rpcUrl),
      chainPaymentSettler(first.config.publicBaseUrl),
    );
    const moved = await findNetwork(first.ctx.store, first.ctx.box, "ethereum");
    expect(moved?.scannedBlock).not.toBe(stale.scannedBlock);
    const late = scanNetwork(
      second.ctx.store,
      stale,
      second.ctx.chains.for("ethereum", stale.rpcUrl),
      chainPaymentSettler(second.config.publicBaseUrl),
    );
    await expect(late).rejects.toThrow(/checkpoint of ethereum moved/);
    const after = await findNetwork(first.ctx.store, first.ctx.box, "ethereum");
    expect([after?.scannedBlock, after?.scannedHash]).toEqual([moved?.scannedBlock, moved?.scannedHash]);
    expect(await paymentRows(first, invoice.id)).toHaveLength(1);
    await auditAndExpect(first);
  });

  it("a batch that outlived its lease writes nothing: the lease token is checked in each of its transactions", async () => {
    const m = await liveMerchant(first);
    const invoice = await liveInvoice(first, m.apiKey, { currency: "USDT", amount: "10" });
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(first, invoice.id), usdt("10")));
    await chain.mine(CONFIRMATIONS);
    const expireLease = () =>
      first.ctx.store.transaction((tx) =>
        tx.db.updateTable("networks").set({ lease_until: "2000-01-01T00:00:00.000Z" }).execute(),
      );
    const inAMinute = () => new Date(Date.now() + 60_000).toISOString();
    await expireLease();
    const paused = await takeScanLease(first.ctx.store, "ethereum", "paused-process", nowIso(), inAMinute());
    expect(paused).toBeTruthy();
    const network = await findNetwork(first.ctx.store, first.ctx.box, "ethereum");
    if (!network) throw new Error("network missing");
    // The holder stalls past its lease; another process takes the network over.
    await expireLease();
    expect(await takeScanLease(second.ctx.store, "ethereum", "other-process", nowIso(), inAMinute())).toBeTruthy();
    const late = scanNetwork(
      first.ctx.store,
      network,
      first.ctx.chains.for("ethereum", network.rpcUrl),
      chainPaymentSettler(first.config.publicBaseUrl),
      paused as ScanLease,
    );
    await expect(late).rejects.toThrow(/expired or was taken over/);
    expect(await paymentRows(first, invoice.id)).toEqual([]);
    const after = await findNetwork(first.ctx.store, first.ctx.box, "ethereum");
    expect([after?.scannedBlock, after?.scannedHash, after?.leaseOwner]).toEqual([
      network.scannedBlock,
      network.scannedHash,
      "other-process",
    ]);
    // The new holder's batch records the payment, once.
    await expireLease();
    await scan(first);
    expect((await getInvoice(first, m.apiKey, invoice.id)).status).toBe("completed");
    expect(await paymentRows(first, invoice.id)).toHaveLength(1);
    await auditAndExpect(first);
  });

  it("a sweep batch that outlived its lease writes nothing: no funding signed, no nonce taken, nothing sent", async () => {
    const hot = first.ctx.wallet?.hotAddress;
    if (!hot) throw new Error("no wallet");
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hot, parseEther("1")));
    const m = await liveMerchant(first);
    const invoice = await liveInvoice(first, m.apiKey, { currency: "USDT", amount: "10" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(first, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(first, invoice.id), usdt("10")));
    await chain.mine(CONFIRMATIONS);
    const expireLease = () =>
      first.ctx.store.transaction((tx) =>
        tx.db.updateTable("networks").set({ lease_until: "2000-01-01T00:00:00.000Z" }).execute(),
      );
    const inAMinute = () => new Date(Date.now() + 60_000).toISOString();
    const network = await findNetwork(first.ctx.store, first.ctx.box, "ethereum");
    if (!network) throw new Error("network missing");
    const client = first.ctx.chains.for("ethereum", network.rpcUrl);
    // The payment is recorded and confirmed; its sweep waits.
    await scanNetwork(first.ctx.store, network, client, chainPaymentSettler(first.config.publicBaseUrl));
    const sweepRow = () =>
      first.ctx.store.db
        .selectFrom("sweeps")
        .selectAll()
        .where("invoice_id", "=", invoice.id)
        .executeTakeFirstOrThrow();
    expect((await sweepRow()).state).toBe("pending");
    const hotNonce = async () =>
      (await first.ctx.store.db.selectFrom("networks").select("hot_nonce").executeTakeFirstOrThrow()).hot_nonce;
    const nonceBefore = await hotNonce();
    const chainNonceBefore = await chain.client.getTransactionCount({ address: hot, blockTag: "pending" });
    await expireLease();
    const paused = await takeScanLease(first.ctx.store, "ethereum", "paused-process", nowIso(), inAMinute());
    expect(paused).toBeTruthy();
    // The holder stalls past its lease; another process takes the network over; the stale batch runs on.
    await expireLease();
    expect(await takeScanLease(second.ctx.store, "ethereum", "other-process", nowIso(), inAMinute())).toBeTruthy();
    await expect(
      sweepNetwork({ ...first.ctx, now: () => new Date(), log: first.app.log }, network, client, {
        now: nowIso(),
        lease: paused as ScanLease,
      }),
    ).rejects.toThrow(/expired or was taken over/);
    const untouched = await sweepRow();
    expect([untouched.state, untouched.attempts]).toEqual(["pending", 0]);
    expect(await outboxOf(first, "funding")).toEqual([]);
    expect(await hotNonce()).toEqual(nonceBefore);
    expect(await chain.client.getTransactionCount({ address: hot, blockTag: "pending" })).toBe(chainNonceBefore);
    // The lease's holder sweeps it, once.
    await expireLease();
    for (let round = 0; round < 10; round++) {
      if ((await sweepRow()).state === "completed") break;
      await first.ctx.store.transaction((tx) =>
        tx.db.updateTable("sweeps").set({ next_attempt_at: "2000-01-01T00:00:00.000Z" }).execute(),
      );
      await scan(first);
      await chain.mine(1);
    }
    expect((await sweepRow()).state).toBe("completed");
    expect(await token.balanceOf(await depositOf(first, invoice.id))).toBe(0n);
    await auditAndExpect(first);
  });
});
