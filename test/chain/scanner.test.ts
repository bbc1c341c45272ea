import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { rpcChainClient } from "../../src/chain/rpc.ts";
import type { ChainClient } from "../../src/domain/chain.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import { balances } from "../support/invoices.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  mineAndScan,
  payer,
  paymentRows,
  scan,
  startLiveServer,
  usdt,
} from "../support/live.ts";
import { admin, call, createTestDatabase, type TestDatabase, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
let database: TestDatabase;

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  // A database of its own, kept when a server closes: the crash test restarts the service on it.
  database = await createTestDatabase();
  server = await startLiveServer(chain, token, { database });
  await token.mint(payer(chain, 1), usdt("1000"));
  await scan(server);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await database?.drop();
  await chain?.close();
});

describe("a reorganisation", () => {
  it("before confirmation depth drops the payment of the replaced block; a new payment then completes", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    const snapshot = await chain.snapshot();
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
    await scan(server);
    expect((await getInvoice(server, m.apiKey, invoice.id)).paid_amount).toBe("10");

    await chain.revert(snapshot);
    await chain.mine(2);
    await scan(server);
    const after = await getInvoice(server, m.apiKey, invoice.id);
    expect(after.paid_amount).toBe("0");
    expect(after.status).toBe("processing");
    expect(await paymentRows(server, invoice.id)).toEqual([]);
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");

    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("9");
    await auditAndExpect(server);
  });

  it("after confirmation depth leaves the confirmed payment final and rescans the new blocks", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    const snapshot = await chain.snapshot();
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    const scannedBefore = await server.ctx.store.db
      .selectFrom("networks")
      .select(["scanned_block", "scanned_hash"])
      .executeTakeFirstOrThrow();

    await chain.revert(snapshot);
    await chain.mine(CONFIRMATIONS + 3);
    await scan(server);
    const scannedAfter = await server.ctx.store.db
      .selectFrom("networks")
      .select(["scanned_block", "scanned_hash"])
      .executeTakeFirstOrThrow();
    expect(scannedAfter.scanned_hash).not.toBe(scannedBefore.scanned_hash);
    expect(BigInt(scannedAfter.scanned_block ?? 0)).toBe(await chain.head());
    const rows = await paymentRows(server, invoice.id);
    expect(rows.map((r) => [r.amount, r.confirmed])).toEqual([["10000000", 1]]);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("9");
    await auditAndExpect(server);
  });
});

describe("a crash mid-scan", () => {
  it("commits nothing of the interrupted batch; a restart resumes from the checkpoint and counts once", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
    await server.close();

    // A process that dies after reading blocks and before writing (the logs call throws, as a crash would).
    let crashing = true;
    const crashingFactory = (url: string): ChainClient => {
      const real = rpcChainClient(url, { timeoutMs: 1500 });
      return {
        ...real,
        transferLogs: async (...args) => {
          if (crashing) throw new Error("simulated crash mid-scan");
          return real.transferLogs(...args);
        },
      };
    };
    server = await startLiveServer(chain, token, {
      database,
      configure: false,
      chainClientFactory: crashingFactory,
    });
    const before = await server.ctx.store.db.selectFrom("networks").select("scanned_block").executeTakeFirstOrThrow();
    await expect(scan(server)).rejects.toThrow(/simulated crash/);
    expect(await paymentRows(server, invoice.id)).toEqual([]);
    const during = await server.ctx.store.db.selectFrom("networks").select("scanned_block").executeTakeFirstOrThrow();
    expect(during.scanned_block).toEqual(before.scanned_block);
    await server.workers.stop();

    crashing = false;
    await mineAndScan(server, chain, CONFIRMATIONS);
    await mineAndScan(server, chain, 1);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    expect(await paymentRows(server, invoice.id)).toHaveLength(1);
    expect((await balances(server, m.id)).USDT).toBe("9");
    await auditAndExpect(server);
  });
});

describe("a node that fails or lies", () => {
  for (const fault of ["wrong_chain_id", "down", "hang", "error"] as const) {
    it(`(${fault}) credits nothing, shows in GET /admin/v1/networks, /readyz and the metrics, and recovers`, async () => {
      const m = await liveMerchant(server);
      const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
      const address = await depositOf(server, invoice.id);
      await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
      await chain.mine(CONFIRMATIONS);
      chain.setFault(fault);
      try {
        await scan(server);
        expect(await paymentRows(server, invoice.id)).toEqual([]);
        expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("pending");
        const ready = await call(server.baseUrl, "GET", "/readyz");
        expect(ready.status).toBe(200);
        expect(ready.body.networks).toEqual([
          {
            network: "ethereum",
            ok: false,
            error: expect.stringMatching(fault === "wrong_chain_id" ? /wrong_chain_id/ : /node_/),
            since: expect.any(String),
          },
        ]);
        const networks = await admin(server, "GET", "/networks");
        expect(networks.body[0].scannerError).toMatch(/node_|wrong_chain_id/);
        expect(networks.body[0].nodeError).not.toBeNull();
        const metrics = await call(server.baseUrl, "GET", "/metrics", {
          headers: { authorization: `Bearer ${server.adminToken}` },
        });
        expect(metrics.text).toMatch(/payments_chain_node_up\{network="ethereum"\} 0/);
        expect(metrics.text).toMatch(/payments_scanner_lag_blocks\{network="ethereum"\} \d+/);
      } finally {
        chain.setFault("none");
      }
      await mineAndScan(server, chain, 1);
      expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
      expect((await balances(server, m.id)).USDT).toBe("9");
      const ready = await call(server.baseUrl, "GET", "/readyz");
      expect(ready.body.networks[0].ok).toBe(true);
      await auditAndExpect(server);
    });
  }
});

describe("the scanner's log", () => {
  it("says a pass that recorded payments at info, and one that only read blocks at debug", async () => {
    const info = vi.spyOn(server.app.log, "info");
    const debug = vi.spyOn(server.app.log, "debug");
    const scannedBy = (spy: typeof info) => spy.mock.calls.filter(([, message]) => message === "scanned").length;
    try {
      await chain.mine(1);
      await scan(server);
      expect([scannedBy(info), scannedBy(debug)]).toEqual([0, 1]);
      const m = await liveMerchant(server);
      const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
      await chain.waitForReceipt(
        await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("10")),
      );
      await scan(server);
      expect([scannedBy(info), scannedBy(debug)]).toEqual([1, 1]);
    } finally {
      info.mockRestore();
      debug.mockRestore();
    }
  });
});
