// The local chain harness itself: the node, the test token, mining, reorganisations and node faults, through the service's chain adapter.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcChainClient } from "../../src/chain/rpc.ts";
import { hdWallet } from "../../src/chain/wallet.ts";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "../support/chain.ts";

let chain: LocalChain;
let token: TestToken;

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
}, 60_000);

afterAll(async () => {
  await chain?.close();
});

describe("local chain harness", () => {
  it("answers the chain id, blocks, balances and transfer logs through the adapter", async () => {
    const client = rpcChainClient(chain.url, { timeoutMs: 2000 });
    expect(await client.chainId()).toEqual({ ok: true, value: chain.chainId });
    const wallet = hdWallet(SERVICE_MNEMONIC);
    const deposit = wallet.deposits.address(1);
    const payer = chain.accounts[1] as `0x${string}`;
    await token.mint(payer, 5_000_000n);
    const hash = await token.transfer(payer, deposit, 1_250_000n);
    const receipt = await chain.waitForReceipt(hash);
    const logs = await client.transferLogs([token.address], receipt.blockNumber, receipt.blockNumber);
    expect(logs.ok && logs.value.map((l) => [l.to, l.value, l.transactionHash])).toEqual([[deposit, 1_250_000n, hash]]);
    const ethHash = await chain.sendEth(payer, deposit, 10n ** 15n);
    const ethReceipt = await chain.waitForReceipt(ethHash);
    const block = await client.block(ethReceipt.blockNumber);
    expect(block.ok && block.value?.transactions.map((t) => [t.hash, t.to, t.value])).toEqual([
      [ethHash, deposit, 10n ** 15n],
    ]);
    expect(await client.balance(deposit)).toEqual({ ok: true, value: 10n ** 15n });
    expect(await client.tokenBalance(token.address, deposit)).toEqual({ ok: true, value: 1_250_000n });
    expect(await client.block(10_000n)).toEqual({ ok: true, value: null });
  });

  it("replaces blocks after a snapshot is reverted (a reorganisation)", async () => {
    const id = await chain.snapshot();
    await chain.mine(2);
    const head = await chain.head();
    const before = await chain.client.getBlock({ blockNumber: head });
    await chain.revert(id);
    await chain.mine(2);
    const after = await chain.client.getBlock({ blockNumber: head });
    expect(after.hash).not.toBe(before.hash);
  });

  it("makes the node fail as a real one can, as values", async () => {
    const client = rpcChainClient(chain.url, { timeoutMs: 500 });
    chain.setFault("wrong_chain_id");
    expect(await client.chainId()).toEqual({ ok: true, value: chain.chainId + 1 });
    chain.setFault("down");
    expect((await client.headBlockNumber()).ok).toBe(false);
    chain.setFault("hang");
    expect(await client.headBlockNumber()).toMatchObject({ ok: false, error: "node_timeout" });
    chain.setFault("error");
    expect(await client.headBlockNumber()).toMatchObject({ ok: false, error: "node_error" });
    chain.setFault("none");
    expect((await client.headBlockNumber()).ok).toBe(true);
    // A port where nothing listens.
    const nowhere = rpcChainClient("http://127.0.0.1:9/", { timeoutMs: 500 });
    expect(await nowhere.chainId()).toMatchObject({ ok: false, error: "node_unreachable" });
  });

  it("reverts a token transfer to a blocked address", async () => {
    const payer = chain.accounts[2] as `0x${string}`;
    const blocked = chain.accounts[3] as `0x${string}`;
    await token.mint(payer, 100n);
    await chain.waitForReceipt(await token.setBlocked(blocked, true));
    await expect(token.transfer(payer, blocked, 1n)).rejects.toThrow(/blocked/);
  });

  it("runs several chains at once, each its own process, port and chain id, stopped by process id", async () => {
    const [mainnet, base] = await Promise.all([startLocalChain({ chainId: 1 }), startLocalChain({ chainId: 8453 })]);
    try {
      expect(mainnet.port).not.toBe(base.port);
      expect(await rpcChainClient(mainnet.url, { timeoutMs: 2000 }).chainId()).toEqual({ ok: true, value: 1 });
      expect(await rpcChainClient(base.url, { timeoutMs: 2000 }).chainId()).toEqual({ ok: true, value: 8453 });
      const before = await base.head();
      await mainnet.mine(3);
      expect(await base.head()).toBe(before);
    } finally {
      await base.close();
    }
    // A stopped node no longer answers; the other one still does.
    const stopped = rpcChainClient(base.url, { timeoutMs: 500 });
    expect((await stopped.headBlockNumber()).ok).toBe(false);
    expect((await rpcChainClient(mainnet.url, { timeoutMs: 2000 }).headBlockNumber()).ok).toBe(true);
    await mainnet.close();
  }, 60_000);
});
