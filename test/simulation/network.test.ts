// The simulated EVM network of the seeded simulation: token, mempool rules, rewinds, gas estimates and determinism.
import { encodeDeployData, encodeFunctionData, erc20Abi, getAddress, type TransactionSerializable } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { compileTestToken } from "../../simulation/contracts.ts";
import { deployTestToken, type SimAccount, SimulatedNetwork, simAccount } from "../../simulation/network.ts";
import type { CallRequest, Hex } from "../../src/domain/chain.ts";

const GWEI = 1_000_000_000n;
const ETHER = 10n ** 18n;
const owner = simAccount("owner");
const payer = simAccount("payer");
const merchant = simAccount("merchant");

async function network(): Promise<SimulatedNetwork> {
  return SimulatedNetwork.create({
    chainId: 31337,
    funded: [
      { address: owner.address, wei: 10n * ETHER },
      { address: payer.address, wei: 10n * ETHER },
    ],
  });
}

function transferData(to: Hex, amount: bigint): Hex {
  return encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [to, amount] });
}

/** A raw transaction signed by `account` with the given fees (EIP-1559 unless a gas price is given). */
async function signed(
  account: SimAccount,
  tx: {
    nonce: number;
    maxFeePerGas?: bigint;
    maxPriorityFeePerGas?: bigint;
    gasPrice?: bigint;
    chainId?: number;
    gas?: bigint;
    value?: bigint;
  },
): Promise<Hex> {
  const base = {
    chainId: tx.chainId ?? 31337,
    nonce: tx.nonce,
    gas: tx.gas ?? 21_000n,
    to: merchant.address,
    value: tx.value ?? 1n,
  };
  const serializable: TransactionSerializable =
    tx.gasPrice === undefined
      ? {
          ...base,
          type: "eip1559",
          maxFeePerGas: tx.maxFeePerGas ?? 3n * GWEI,
          maxPriorityFeePerGas: tx.maxPriorityFeePerGas ?? GWEI,
        }
      : { ...base, type: "legacy", gasPrice: tx.gasPrice };
  return privateKeyToAccount(account.privateKey).signTransaction(serializable);
}

describe("SimulatedNetwork", () => {
  it("deploys the test token, mints, transfers, and answers logs, receipts, blocks and balances", async () => {
    const net = await network();
    const client = net.client();
    const token = await deployTestToken(net, owner, 10n);
    expect(token.decimals).toBe(6);
    expect((await client.code(token.address)).ok).toBe(true);
    await token.mint(payer.address, 1_000n, 11n);
    const hash = await net.send(payer, { to: token.address, data: transferData(merchant.address, 400n) });
    const block = await net.mine(12n);

    expect(net.headNumber()).toBe(3n);
    expect(block.transactions).toEqual([{ hash, from: payer.address, to: token.address, value: 0n }]);
    expect(await net.tokenBalance(token.address, merchant.address)).toBe(400n);
    expect(await client.tokenBalance(token.address, payer.address)).toEqual({ ok: true, value: 600n });
    const logs = await client.transferLogs([token.address], 0n, 3n);
    expect(logs.ok && logs.value.map((l) => [l.from, l.to, l.value, l.blockNumber, l.logIndex])).toEqual([
      [getAddress(`0x${"0".repeat(40)}`), payer.address, 1_000n, 2n, 0],
      [payer.address, merchant.address, 400n, 3n, 0],
    ]);
    expect(net.transferLogs()).toEqual(logs.ok ? logs.value : []);
    expect(await client.transferLogs([merchant.address], 0n, 3n)).toEqual({ ok: true, value: [] });

    const receipt = await client.receipt(hash);
    expect(receipt.ok && receipt.value?.status).toBe("success");
    expect(receipt.ok && receipt.value?.blockHash).toBe(block.hash);
    // Base 1 gwei plus a 1 gwei tip, under the 3 gwei cap.
    expect(receipt.ok && receipt.value?.effectiveGasPrice).toBe(2n * GWEI);
    expect(receipt.ok && receipt.value?.logs?.[0]?.address).toBe(token.address);
    const gasUsed = receipt.ok ? (receipt.value?.gasUsed ?? 0n) : 0n;
    expect(await net.balance(payer.address)).toBe(10n * ETHER - gasUsed * 2n * GWEI);

    expect(await client.block(4n)).toEqual({ ok: true, value: null });
    const header = await client.block(3n, { withTransactions: false });
    expect(header.ok && header.value).toEqual({ ...block, transactions: [] });
    expect(await client.fees()).toEqual({
      ok: true,
      value: { gasPrice: 2n * GWEI, maxFeePerGas: 3n * GWEI, maxPriorityFeePerGas: GWEI },
    });
    expect(net.minedTransactions().map((t) => [t.from, t.nonce, t.blockNumber, t.status])).toEqual([
      [owner.address, 0, 1n, "success"],
      [owner.address, 1, 2n, "success"],
      [payer.address, 0, 3n, "success"],
    ]);
  });

  it("keeps a transaction after a nonce gap pending until the gap fills, and answers latest and pending nonces", async () => {
    const net = await network();
    const client = net.client();
    const later = await net.send(payer, { to: merchant.address, value: 1n, nonce: 1 });
    expect((await net.mine(1n)).transactions).toEqual([]);
    expect(net.pendingHashes()).toEqual([later]);
    expect(await client.nonce(payer.address, "pending")).toEqual({ ok: true, value: 0 });

    const first = await net.send(payer, { to: merchant.address, value: 1n });
    expect(await client.nonce(payer.address, "pending")).toEqual({ ok: true, value: 2 });
    expect(await client.nonce(payer.address, "latest")).toEqual({ ok: true, value: 0 });
    const block = await net.mine(2n);
    expect(block.transactions.map((t) => t.hash)).toEqual([first, later]);
    expect(await client.nonce(payer.address, "latest")).toEqual({ ok: true, value: 2 });
  });

  it("orders senders by effective tip, keeps fee caps under the base fee, exclusions and the limit pending", async () => {
    const net = await network();
    const cheap = await signed(owner, { nonce: 0, maxFeePerGas: 3n * GWEI, maxPriorityFeePerGas: (3n * GWEI) / 2n });
    const generous = await signed(payer, { nonce: 0, maxFeePerGas: 5n * GWEI, maxPriorityFeePerGas: 2n * GWEI });
    const cheapHash = await net.client().sendRawTransaction(cheap);
    const generousHash = await net.client().sendRawTransaction(generous);
    assertOkHash(cheapHash);
    assertOkHash(generousHash);
    net.setBaseFee(4n * GWEI);
    expect((await net.mine(1n)).transactions.map((t) => t.hash)).toEqual([generousHash.value]);
    net.setBaseFee(GWEI);
    expect((await net.mine(2n, { exclude: new Set([cheapHash.value]) })).transactions).toEqual([]);
    const third = await net.send(payer, { to: merchant.address, value: 1n });
    expect((await net.mine(3n, { maxTransactions: 1 })).transactions.map((t) => t.hash)).toEqual([cheapHash.value]);
    expect(net.pendingHashes()).toEqual([third]);
  });

  it("refuses underpriced replacements, accepts a 10% bump that evicts, and refuses what a node refuses", async () => {
    const net = await network();
    const client = net.client();
    const original = await signed(payer, { nonce: 0, maxFeePerGas: 10n * GWEI, maxPriorityFeePerGas: 2n * GWEI });
    const first = await client.sendRawTransaction(original);
    assertOkHash(first);
    expect(await client.sendRawTransaction(original)).toEqual(first);

    const tipTooLow = await signed(payer, { nonce: 0, maxFeePerGas: 20n * GWEI, maxPriorityFeePerGas: 2n * GWEI + 1n });
    expect(await client.sendRawTransaction(tipTooLow)).toMatchObject({
      ok: false,
      detail: "replacement transaction underpriced",
    });
    const bumped = await signed(payer, {
      nonce: 0,
      maxFeePerGas: 11n * GWEI,
      maxPriorityFeePerGas: (22n * GWEI) / 10n,
    });
    const replacement = await client.sendRawTransaction(bumped);
    assertOkHash(replacement);
    expect(net.pendingHashes()).toEqual([replacement.value]);
    await net.mine(1n);
    expect(await client.receipt(first.value)).toEqual({ ok: true, value: null });
    expect(await client.sendRawTransaction(bumped)).toEqual(replacement);

    const refusals: [Promise<Hex>, string][] = [
      [signed(payer, { nonce: 0, maxFeePerGas: 50n * GWEI }), "nonce too low"],
      [signed(payer, { nonce: 1, value: 100n * ETHER }), "insufficient funds"],
      [signed(payer, { nonce: 1, gas: 20_000n }), "intrinsic gas too low"],
      [signed(payer, { nonce: 1, chainId: 1 }), "invalid chain id"],
    ];
    for (const [raw, detail] of refusals) {
      const answer = await client.sendRawTransaction(await raw);
      expect(answer).toMatchObject({ ok: false, error: "node_error" });
      expect(answer.ok ? "" : answer.detail).toContain(detail);
    }
    const legacy = await client.sendRawTransaction(await signed(payer, { nonce: 1, gasPrice: 3n * GWEI }));
    assertOkHash(legacy);
    await net.mine(2n);
    const receipt = await client.receipt(legacy.value);
    expect(receipt.ok && receipt.value?.effectiveGasPrice).toBe(3n * GWEI);
  });

  it("rewinds two blocks: balances and logs restored, transactions back in the mempool, new hashes when mined again", async () => {
    const net = await network();
    const client = net.client();
    const token = await deployTestToken(net, owner, 1n);
    await token.mint(payer.address, 1_000n, 2n);
    const before = { native: await net.balance(payer.address), logs: net.transferLogs() };
    const a = await net.send(payer, { to: token.address, data: transferData(merchant.address, 100n) });
    const blockA = await net.mine(3n);
    const b = await net.send(payer, { to: token.address, data: transferData(merchant.address, 200n) });
    const blockB = await net.mine(4n);
    expect(await net.tokenBalance(token.address, merchant.address)).toBe(300n);

    expect(await net.rewind(2)).toEqual([a, b]);
    expect(net.headNumber()).toBe(2n);
    expect(await client.block(3n)).toEqual({ ok: true, value: null });
    expect(await net.tokenBalance(token.address, merchant.address)).toBe(0n);
    expect(await net.balance(payer.address)).toBe(before.native);
    expect(net.transferLogs()).toEqual(before.logs);
    expect(await client.receipt(a)).toEqual({ ok: true, value: null });
    expect(net.pendingHashes()).toEqual([a, b]);
    expect(await client.nonce(payer.address, "latest")).toEqual({ ok: true, value: 0 });

    const again = [await net.mine(3n, { maxTransactions: 1 }), await net.mine(4n)];
    expect(again.map((blk) => blk.transactions.map((t) => t.hash))).toEqual([[a], [b]]);
    expect(again[0]?.hash).not.toBe(blockA.hash);
    expect(again[1]?.hash).not.toBe(blockB.hash);
    for (let n = 1n; n <= net.headNumber(); n++) {
      const [parent, child] = [await client.block(n - 1n), await client.block(n)];
      expect(child.ok && child.value?.parentHash).toBe(parent.ok && parent.value?.hash);
    }
    expect(await net.tokenBalance(token.address, merchant.address)).toBe(300n);
    const logs = net.transferLogs();
    expect(logs.at(-1)?.blockHash).toBe(again[1]?.hash);
  });

  it("estimates enough gas for an ERC-20 transfer and a contract creation, and answers reverts", async () => {
    const net = await network();
    const client = net.client();
    const token = await deployTestToken(net, owner, 1n);
    await token.mint(payer.address, 1_000n, 2n);
    const transfer = { from: payer.address, to: token.address, data: transferData(merchant.address, 1_000n) };
    const transferGas = await client.estimateGas(transfer);
    assertOkGas(transferGas);
    const { abi, bytecode } = compileTestToken();
    const data = encodeDeployData({ abi, bytecode, args: ["Other", "OTH", 18] });
    const creationGas = await client.estimateGas({ from: payer.address, data } as unknown as CallRequest);
    assertOkGas(creationGas);
    const sentTransfer = await net.send(payer, { to: token.address, data: transfer.data, gas: transferGas.value });
    const sentCreation = await net.send(payer, { to: null, data, gas: creationGas.value });
    await net.mine(3n);
    for (const hash of [sentTransfer, sentCreation]) {
      const receipt = await client.receipt(hash);
      expect(receipt.ok && receipt.value?.status).toBe("success");
    }
    expect(await client.estimateGas(transfer)).toEqual({
      ok: false,
      error: "node_error",
      detail: "execution reverted",
    });
    expect(await client.estimateGas({ from: payer.address, to: merchant.address, value: 1n })).toEqual({
      ok: true,
      value: 21_000n,
    });
    await expect(net.call(token.address, transfer.data, payer.address)).rejects.toThrow("execution reverted");
  });

  it("serves concurrent callers one at a time, in call order", async () => {
    const net = await network();
    const client = net.client();
    const token = await deployTestToken(net, owner, 1n);
    await token.mint(payer.address, 1_000n, 2n);
    const transfer = { from: payer.address, to: token.address, data: transferData(merchant.address, 10n) };
    const sent = net.send(payer, { to: token.address, data: transfer.data });
    const [estimate, hash, block, balance, pending] = await Promise.all([
      client.estimateGas(transfer),
      sent,
      net.mine(3n),
      client.tokenBalance(token.address, merchant.address),
      client.nonce(payer.address, "pending"),
    ]);
    expect(estimate.ok).toBe(true);
    expect(block.transactions.map((t) => t.hash)).toEqual([hash]);
    expect(balance).toEqual({ ok: true, value: 10n });
    expect(pending).toEqual({ ok: true, value: 1 });
    expect(await client.code("0xnot-an-address" as Hex)).toMatchObject({ ok: false, error: "node_error" });
    expect(await client.tokenBalance(merchant.address, payer.address)).toMatchObject({
      ok: false,
      error: "node_error",
    });
  });

  it("gives identical block hashes to two networks created with the same inputs", async () => {
    const hashes = async (): Promise<Hex[]> => {
      const net = await network();
      const token = await deployTestToken(net, owner, 1n);
      await token.mint(payer.address, 50n, 2n);
      await net.send(payer, { to: token.address, data: transferData(merchant.address, 5n) });
      await net.mine(3n);
      await net.rewind(1);
      await net.mine(4n);
      const all: Hex[] = [];
      for (let n = 0n; n <= net.headNumber(); n++) {
        const block = await net.client().block(n);
        if (block.ok && block.value) all.push(block.value.hash);
      }
      return all;
    };
    const first = await hashes();
    expect(first).toHaveLength(4);
    expect(await hashes()).toEqual(first);
  });
});

function assertOkHash(answer: { ok: boolean; value?: Hex }): asserts answer is { ok: true; value: Hex } {
  expect(answer.ok).toBe(true);
}

function assertOkGas(answer: { ok: boolean; value?: bigint }): asserts answer is { ok: true; value: bigint } {
  expect(answer.ok).toBe(true);
}
