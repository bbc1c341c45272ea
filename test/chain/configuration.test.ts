// The scanner misses nothing after configuration (product §19): PUT /admin/v1/networks/{network} records the node's head as the scanner's start, refuses a node without a head, and keeps the chain of a network that issued deposit addresses.
import { parseEther } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalChain, TestToken } from "../support/chain.ts";
import { startLocalChain } from "../support/chain.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  mineAndScan,
  payer,
  startLiveServer,
} from "../support/live.ts";
import { admin, expectProblem, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  // Configured (PUT /admin/v1/networks/ethereum), never scanned yet.
  server = await startLiveServer(chain, token);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

async function networkRow() {
  return server.ctx.store.db
    .selectFrom("networks")
    .selectAll()
    .where("name", "=", "ethereum")
    .executeTakeFirstOrThrow();
}

describe("after PUT /admin/v1/networks/{network}", () => {
  it("sees a payment mined long before the scanner's first pass: the scan starts at the head read at configuration", async () => {
    // The fixture's factory deployment (product §24) mined one block after the PUT.
    const configuredAt = (await chain.head()) - 1n;
    expect(String((await networkRow()).scanned_block)).toBe((configuredAt - 1n).toString());
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.1" });
    await chain.waitForReceipt(
      await chain.sendEth(payer(chain, 2), await depositOf(server, invoice.id), parseEther("0.1")),
    );
    // Many blocks pass before the scanner first runs (a slow start, a node down for a while).
    await chain.mine(CONFIRMATIONS + 20);
    await mineAndScan(server, chain, 1);
    const seen = await getInvoice(server, m.apiKey, invoice.id);
    expect([seen.status, seen.paid_amount]).toEqual(["completed", "0.1"]);
    await auditAndExpect(server);
  });

  it("answers 503 node_unavailable when the node gives no head, and changes nothing", async () => {
    const before = await networkRow();
    chain.setFault("no_head");
    try {
      const answer = await admin(server, "PUT", "/networks/ethereum", {
        chainId: chain.chainId,
        rpcUrl: chain.url,
        confirmations: 7,
      });
      expectProblem(answer, 503, "node_unavailable");
      const created = await admin(server, "PUT", "/networks/other", { chainId: chain.chainId, rpcUrl: chain.url });
      expectProblem(created, 503, "node_unavailable");
    } finally {
      chain.setFault("none");
    }
    expect(await networkRow()).toEqual(before);
    const names = await server.ctx.store.db.selectFrom("networks").select("name").execute();
    expect(names.map((n) => n.name)).toEqual(["ethereum"]);
  });

  it("refuses to move a network that issued deposit addresses to another chain (409 network_in_use)", async () => {
    const before = await networkRow();
    // The node now says it is chain id + 1: the operator's new chainId matches it.
    chain.setFault("wrong_chain_id");
    try {
      const moved = await admin(server, "PUT", "/networks/ethereum", { chainId: chain.chainId + 1, rpcUrl: chain.url });
      expectProblem(moved, 409, "network_in_use");
      expect(await networkRow()).toEqual(before);
      // A network that never issued an address moves freely, and starts again at the head.
      chain.setFault("none");
      expect(
        (await admin(server, "PUT", "/networks/spare", { chainId: chain.chainId, rpcUrl: chain.url })).status,
      ).toBe(200);
      chain.setFault("wrong_chain_id");
      const spare = await admin(server, "PUT", "/networks/spare", { chainId: chain.chainId + 1, rpcUrl: chain.url });
      expect(spare.status).toBe(200);
      const row = await server.ctx.store.db
        .selectFrom("networks")
        .selectAll()
        .where("name", "=", "spare")
        .executeTakeFirstOrThrow();
      expect([Number(row.chain_id), String(row.scanned_block)]).toEqual([
        chain.chainId + 1,
        ((await chain.head()) - 1n).toString(),
      ]);
    } finally {
      chain.setFault("none");
    }
  });
});
