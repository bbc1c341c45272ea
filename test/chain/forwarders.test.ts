// Keyless deposit addresses on two real anvil chains (product §24): one factory address, one deposit address per invoice on both, flushes of ETH and ERC-20s (one returning no boolean), strangers refused, batches of 10 and 50.
import {
  createPublicClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  type Hex,
  http,
  keccak256,
  parseEther,
} from "viem";
import { english, generateMnemonic, type HDAccount, mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  deployFactory,
  factoryStatus,
  flushCalldata,
  flushOutcome,
  sendFlush,
  signFlush,
} from "../../src/chain/forwarders.ts";
import { DEPOSIT_FORWARDER_ABI, FORWARDER_FACTORY_ABI } from "../../src/domain/forwarderContracts.generated.ts";
import {
  DEPLOYMENT_PROXY,
  type FlushItem,
  factoryAddress,
  forwarderAddress,
  forwarderId,
  forwarderImplementationAddress,
  invoiceDepositAddress,
  MAX_FLUSH_BATCH,
} from "../../src/domain/forwarders.ts";
import { type Anvil, type Deployed, deployFixture, sendFrom, startAnvil } from "../support/anvil.ts";
import { freePort } from "../support/server.ts";

const MINT_ABI = [
  {
    type: "function",
    name: "mint",
    stateMutability: "nonpayable",
    inputs: [
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "setBlocked",
    stateMutability: "nonpayable",
    inputs: [
      { name: "account", type: "address" },
      { name: "blocked", type: "bool" },
    ],
    outputs: [],
  },
] as const;

let mainnet: Anvil;
let base: Anvil;
let mnemonic: string;
let hot: HDAccount;
/** On each chain: USDT-like (no boolean from transfer) and a standard ERC-20 that can block an address. */
const tokens = new Map<Anvil, { noBool: Deployed; standard: Deployed }>();

async function mint(anvil: Anvil, token: Deployed, to: Hex, amount: bigint): Promise<void> {
  const data = encodeFunctionData({ abi: MINT_ABI, functionName: "mint", args: [to, amount] });
  expect((await sendFrom(anvil, anvil.accounts[0] as HDAccount, { to: token.address, data })).status).toBe("success");
}

function balanceOf(anvil: Anvil, token: Deployed, owner: Hex): Promise<bigint> {
  return anvil.client.readContract({ address: token.address, abi: erc20Abi, functionName: "balanceOf", args: [owner] });
}

async function flush(anvil: Anvil, items: FlushItem[]) {
  const sent = await sendFlush({ client: anvil.client, signer: hot, items });
  if (!sent.ok) throw new Error(`flush: ${sent.error} ${sent.detail ?? ""}`);
  const receipt = await anvil.client.waitForTransactionReceipt({
    hash: sent.value,
    timeout: 20_000,
    pollingInterval: 50,
  });
  expect(receipt.status).toBe("success");
  return { receipt, outcome: flushOutcome(factoryAddress(hot.address), receipt.logs, hot.address) };
}

const code = async (anvil: Anvil, address: Hex) => (await anvil.client.getCode({ address })) ?? "0x";

beforeAll(async () => {
  // The proxy is built into anvil on one chain, installed with anvil_setCode on the other.
  [mainnet, base] = await Promise.all([startAnvil({ chainId: 1 }), startAnvil({ chainId: 8453, builtInProxy: false })]);
  mnemonic = generateMnemonic(english);
  hot = mnemonicToAccount(mnemonic, { addressIndex: 0 });
  for (const anvil of [mainnet, base]) {
    await anvil.rpc("anvil_setBalance", [hot.address, `0x${parseEther("10").toString(16)}`]);
    tokens.set(anvil, {
      noBool: await deployFixture(anvil, "NoBoolToken"),
      standard: await deployFixture(anvil, "TestToken", ["Test Tether", "USDT", 6]),
    });
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([mainnet?.close(), base?.close()]);
});

describe("the factory through the deterministic deployment proxy", () => {
  it("is at one address on both chains, deployed once, and answers the same addresses as the domain", async () => {
    const expected = factoryAddress(hot.address);
    for (const anvil of [mainnet, base]) {
      expect(await code(anvil, DEPLOYMENT_PROXY)).not.toBe("0x");
      expect(await factoryStatus(anvil.client, hot.address)).toEqual({
        ok: true,
        value: { address: expected, deployed: false },
      });
      const first = await deployFactory({ client: anvil.client, signer: hot });
      expect(first.ok && first.value.address).toBe(expected);
      expect(first.ok && first.value.transactionHash).toMatch(/^0x[0-9a-f]{64}$/);
      // Idempotent: a second call sends nothing.
      const nonce = await anvil.client.getTransactionCount({ address: hot.address });
      expect(await deployFactory({ client: anvil.client, signer: hot })).toEqual({
        ok: true,
        value: { address: expected, transactionHash: null },
      });
      expect(await anvil.client.getTransactionCount({ address: hot.address })).toBe(nonce);
      const read = (functionName: "owner" | "implementation") =>
        anvil.client.readContract({ address: expected, abi: FORWARDER_FACTORY_ABI, functionName });
      expect(await read("owner")).toBe(hot.address);
      expect(await read("implementation")).toBe(forwarderImplementationAddress(expected));
      expect(
        await anvil.client.readContract({ address: expected, abi: FORWARDER_FACTORY_ABI, functionName: "MAX_BATCH" }),
      ).toBe(BigInt(MAX_FLUSH_BATCH));
      const id = forwarderId("inv_domain_check");
      expect(
        await anvil.client.readContract({
          address: expected,
          abi: FORWARDER_FACTORY_ABI,
          functionName: "forwarderAddress",
          args: [id],
        }),
      ).toBe(forwarderAddress(hot.address, id));
    }
  });

  it("another payer deploying for the same owner makes the same factory; another owner is another address", async () => {
    const stranger = mainnet.accounts[3] as HDAccount;
    // Paid by a stranger, for the hot wallet: already there, nothing sent.
    expect(await deployFactory({ client: mainnet.client, signer: stranger, owner: hot.address })).toEqual({
      ok: true,
      value: { address: factoryAddress(hot.address), transactionHash: null },
    });
    const theirs = await deployFactory({ client: mainnet.client, signer: stranger });
    expect(theirs.ok && theirs.value.address).toBe(factoryAddress(stranger.address));
    expect(factoryAddress(stranger.address)).not.toBe(factoryAddress(hot.address));
  });

  it("a node without the proxy is told so, not sent a transaction", async () => {
    const bare = await startAnvil({ chainId: 31337 });
    try {
      await bare.rpc("anvil_setCode", [DEPLOYMENT_PROXY, "0x"]);
      const answer = await deployFactory({ client: bare.client, signer: bare.accounts[0] as HDAccount });
      expect(answer).toMatchObject({ ok: false, error: "no_deployment_proxy" });
      expect(await bare.client.getTransactionCount({ address: (bare.accounts[0] as HDAccount).address })).toBe(0);
    } finally {
      await bare.close();
    }
  });
});

describe("deposit addresses", () => {
  it("have no code and no key from the mnemonic, and are the same on both chains", async () => {
    const deposit = invoiceDepositAddress(hot.address, "inv_keyless");
    const derived = Array.from({ length: 20 }, (_, i) => mnemonicToAccount(mnemonic, { addressIndex: i }).address);
    expect(derived).not.toContain(deposit);
    for (const anvil of [mainnet, base]) {
      expect(await code(anvil, deposit)).toBe("0x");
      expect(
        await anvil.client.readContract({
          address: factoryAddress(hot.address),
          abi: FORWARDER_FACTORY_ABI,
          functionName: "forwarderAddress",
          args: [forwarderId("inv_keyless")],
        }),
      ).toBe(deposit);
    }
  });

  it("ETH sent to an undeployed address is flushed to the hot wallet, and the forwarder is deployed on the way", async () => {
    const id = forwarderId("inv_eth");
    const deposit = forwarderAddress(hot.address, id);
    const payer = mainnet.accounts[1] as HDAccount;
    expect((await sendFrom(mainnet, payer, { to: deposit, value: parseEther("0.25") })).status).toBe("success");
    expect(await code(mainnet, deposit)).toBe("0x");
    const before = await mainnet.client.getBalance({ address: hot.address });
    const { receipt, outcome } = await flush(mainnet, [{ id, token: null }]);
    const fee = receipt.gasUsed * receipt.effectiveGasPrice;
    expect(await mainnet.client.getBalance({ address: hot.address })).toBe(before + parseEther("0.25") - fee);
    expect(await mainnet.client.getBalance({ address: deposit })).toBe(0n);
    // An EIP-1167 minimal proxy of the implementation, nothing else.
    const implementation = forwarderImplementationAddress(factoryAddress(hot.address)).slice(2).toLowerCase();
    expect(await code(mainnet, deposit)).toBe(`0x363d3d373d3d3d363d73${implementation}5af43d82803e903d91602b57fd5bf3`);
    expect(outcome).toEqual({ moved: [{ forwarder: deposit, token: null, amount: parseEther("0.25") }], failed: [] });
  });

  it("a token whose transfer returns no boolean is flushed, on both chains, and a second flush moves what came since", async () => {
    const id = forwarderId("inv_usdt");
    const deposit = forwarderAddress(hot.address, id);
    for (const anvil of [mainnet, base]) {
      const { noBool } = tokens.get(anvil) as { noBool: Deployed };
      await mint(anvil, noBool, deposit, 1_000_000n);
      const first = await flush(anvil, [{ id, token: noBool.address }]);
      expect(first.outcome.moved).toEqual([{ forwarder: deposit, token: noBool.address, amount: 1_000_000n }]);
      expect(await balanceOf(anvil, noBool, hot.address)).toBe(1_000_000n);
      expect(await balanceOf(anvil, noBool, deposit)).toBe(0n);
      // The forwarder is deployed now: a second payment and a second flush.
      await mint(anvil, noBool, deposit, 250_000n);
      const second = await flush(anvil, [{ id, token: noBool.address }]);
      expect(second.outcome.moved).toEqual([{ forwarder: deposit, token: noBool.address, amount: 250_000n }]);
      expect(await balanceOf(anvil, noBool, hot.address)).toBe(1_250_000n);
      // Nothing left: a third flush succeeds and moves nothing.
      const third = await flush(anvil, [{ id, token: noBool.address }]);
      expect(third.outcome).toEqual({ moved: [], failed: [] });
      expect(await balanceOf(anvil, noBool, hot.address)).toBe(1_250_000n);
    }
  });
});

describe("nobody but the hot wallet moves anything", () => {
  it("a stranger's flush through the factory, or a direct call to a forwarder or the implementation, reverts and moves nothing", async () => {
    const { standard } = tokens.get(mainnet) as { standard: Deployed };
    const id = forwarderId("inv_stranger");
    const deposit = forwarderAddress(hot.address, id);
    await mint(mainnet, standard, deposit, 500n);
    const stranger = mainnet.accounts[2] as HDAccount;
    const factory = factoryAddress(hot.address);
    const batch = flushCalldata([{ id, token: standard.address }]);
    if (!batch.ok) throw new Error(batch.error);
    expect((await sendFrom(mainnet, stranger, { to: factory, data: batch.value, gas: 500_000n })).status).toBe(
      "reverted",
    );
    expect(await code(mainnet, deposit)).toBe("0x");
    // Deployed by an honest flush of ETH only: the tokens stay, then a stranger calls the forwarder itself.
    await flush(mainnet, [{ id, token: null }]);
    expect(await code(mainnet, deposit)).not.toBe("0x");
    const direct = encodeFunctionData({ abi: DEPOSIT_FORWARDER_ABI, functionName: "flush", args: [standard.address] });
    for (const target of [deposit, forwarderImplementationAddress(factory)]) {
      expect((await sendFrom(mainnet, stranger, { to: target, data: direct, gas: 500_000n })).status).toBe("reverted");
    }
    expect(await balanceOf(mainnet, standard, deposit)).toBe(500n);
    expect(await balanceOf(mainnet, standard, stranger.address)).toBe(0n);
    // And the owner's flush still moves them, to the hot wallet only.
    const { outcome } = await flush(mainnet, [{ id, token: standard.address }]);
    expect(outcome.moved).toEqual([{ forwarder: deposit, token: standard.address, amount: 500n }]);
  });

  it("a forwarder whose token refuses the transfer is reported, and the rest of the batch still moves", async () => {
    const { standard } = tokens.get(base) as { standard: Deployed };
    const blockedId = forwarderId("inv_blocked");
    const fineId = forwarderId("inv_fine");
    const blocked = forwarderAddress(hot.address, blockedId);
    const fine = forwarderAddress(hot.address, fineId);
    await mint(base, standard, blocked, 7n);
    await mint(base, standard, fine, 9n);
    const data = encodeFunctionData({ abi: MINT_ABI, functionName: "setBlocked", args: [blocked, true] });
    await sendFrom(base, base.accounts[0] as HDAccount, { to: standard.address, data });
    const { outcome } = await flush(base, [
      { id: blockedId, token: standard.address },
      { id: fineId, token: standard.address },
    ]);
    expect(outcome).toEqual({
      moved: [{ forwarder: fine, token: standard.address, amount: 9n }],
      failed: [{ forwarder: blocked, token: standard.address }],
    });
    expect(await balanceOf(base, standard, blocked)).toBe(7n);
  });

  it("batches the factory refuses are refused before signing, and on chain", async () => {
    expect(flushCalldata([])).toMatchObject({ ok: false, error: "bad_batch" });
    const tooMany = Array.from({ length: 101 }, (_, i) => ({ id: forwarderId(`inv_many_${i}`), token: null }));
    expect(flushCalldata(tooMany)).toMatchObject({ ok: false, error: "bad_batch" });
    const raw = encodeFunctionData({
      abi: FORWARDER_FACTORY_ABI,
      functionName: "flush",
      args: [
        tooMany.map((i) => i.id),
        ["0x0000000000000000000000000000000000000000"],
        `0x${"00".repeat(tooMany.length)}`,
        0n,
      ],
    });
    const factory = factoryAddress(hot.address);
    const wallet = await sendFrom(mainnet, mainnet.accounts[0] as HDAccount, {
      to: factory,
      data: raw,
      gas: 1_000_000n,
    });
    expect(wallet.status).toBe("reverted");
  });
});

describe("fresh forwarders and the version-1 factory", () => {
  it("a forwarder wrongly called fresh (it has code) reverts the whole flush, nothing moved; told right, it moves", async () => {
    const { standard } = tokens.get(mainnet) as { standard: Deployed };
    const id = forwarderId("inv_wrong_fresh");
    const deposit = forwarderAddress(hot.address, id);
    await flush(mainnet, [{ id, token: null }]);
    await mint(mainnet, standard, deposit, 300n);
    const wrong = flushCalldata([{ id, token: standard.address, fresh: true }]);
    if (!wrong.ok) throw new Error(wrong.error);
    const sent = await sendFrom(mainnet, hot, { to: factoryAddress(hot.address), data: wrong.value, gas: 400_000n });
    expect(sent.status).toBe("reverted");
    expect(await balanceOf(mainnet, standard, deposit)).toBe(300n);
    const { outcome } = await flush(mainnet, [{ id, token: standard.address }]);
    expect(outcome.moved).toEqual([{ forwarder: deposit, token: standard.address, amount: 300n }]);
  });

  it("an address the version-1 factory handed out is still flushed by it, to the hot wallet", async () => {
    const { noBool } = tokens.get(base) as { noBool: Deployed };
    const v1 = await deployFactory({ client: base.client, signer: hot, version: 1 });
    expect(v1.ok && v1.value.address).toBe(factoryAddress(hot.address, 1));
    const id = forwarderId("inv_v1");
    const deposit = forwarderAddress(hot.address, id, 1);
    expect(deposit).not.toBe(forwarderAddress(hot.address, id));
    await mint(base, noBool, deposit, 777n);
    const before = await balanceOf(base, noBool, hot.address);
    const sent = await sendFlush({
      client: base.client,
      signer: hot,
      items: [{ id, token: noBool.address }],
      version: 1,
    });
    if (!sent.ok) throw new Error(sent.error);
    const receipt = await base.client.waitForTransactionReceipt({ hash: sent.value, timeout: 20_000 });
    expect(flushOutcome(factoryAddress(hot.address, 1), receipt.logs, hot.address)).toEqual({
      moved: [{ forwarder: deposit, token: noBool.address, amount: 777n }],
      failed: [],
    });
    expect(await balanceOf(base, noBool, hot.address)).toBe(before + 777n);
  });
});

describe("signing apart from broadcasting", () => {
  it("a flush signed with a given nonce and fees broadcasts twice as one transaction", async () => {
    const { standard } = tokens.get(mainnet) as { standard: Deployed };
    const id = forwarderId("inv_signed");
    await mint(mainnet, standard, forwarderAddress(hot.address, id), 42n);
    const fees = await mainnet.client.estimateFeesPerGas();
    const nonce = await mainnet.client.getTransactionCount({ address: hot.address, blockTag: "pending" });
    const signed = await signFlush({
      signer: hot,
      chainId: mainnet.chainId,
      items: [{ id, token: standard.address }],
      nonce,
      gas: 300_000n,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
    if (!signed.ok) throw new Error(signed.error);
    expect(signed.value.factory).toBe(factoryAddress(hot.address));
    const hash = await mainnet.client.sendRawTransaction({ serializedTransaction: signed.value.signed });
    expect(hash).toBe(keccak256(signed.value.signed));
    const receipt = await mainnet.client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
    // The same bytes again (after a crash): the node knows them; nothing moves twice.
    await mainnet.client.sendRawTransaction({ serializedTransaction: signed.value.signed }).catch(() => undefined);
    expect(await mainnet.client.getTransactionCount({ address: hot.address })).toBe(nonce + 1);
    expect(flushOutcome(signed.value.factory, receipt.logs, hot.address).moved).toEqual([
      { forwarder: forwarderAddress(hot.address, id), token: standard.address, amount: 42n },
    ]);
    expect(
      await signFlush({
        signer: hot,
        chainId: 1,
        items: [],
        nonce,
        gas: 1n,
        maxFeePerGas: 1n,
        maxPriorityFeePerGas: 1n,
      }),
    ).toMatchObject({ ok: false, error: "bad_batch" });
  });

  it("too little gas reverts the whole batch: it never turns into entries reported as failed", async () => {
    const { standard } = tokens.get(base) as { standard: Deployed };
    const items = Array.from({ length: 5 }, (_, i) => ({ id: forwarderId(`inv_gas_${i}`), token: standard.address }));
    for (const item of items) await mint(base, standard, forwarderAddress(hot.address, item.id), 5n);
    const calldata = flushCalldata(items);
    if (!calldata.ok) throw new Error(calldata.error);
    const factory = factoryAddress(hot.address);
    const needed = await base.client.estimateGas({ account: hot.address, to: factory, data: calldata.value });
    const fees = await base.client.estimateFeesPerGas();
    // From just short of the estimate down to a third of it: each attempt reverts as a whole.
    for (const gas of [needed - 1n, (needed * 9n) / 10n, needed / 2n, needed / 3n]) {
      const nonce = await base.client.getTransactionCount({ address: hot.address, blockTag: "pending" });
      const signed = await signFlush({ signer: hot, chainId: base.chainId, items, nonce, gas, ...fees });
      if (!signed.ok) throw new Error(signed.error);
      const hash = await base.client.sendRawTransaction({ serializedTransaction: signed.value.signed });
      const receipt = await base.client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
      expect(receipt.status, `gas ${gas} of ${needed}`).toBe("reverted");
      expect(flushOutcome(factory, receipt.logs, hot.address)).toEqual({ moved: [], failed: [] });
    }
    for (const item of items) expect(await balanceOf(base, standard, forwarderAddress(hot.address, item.id))).toBe(5n);
    const { outcome } = await flush(base, items);
    expect(outcome.moved).toHaveLength(5);
    expect(outcome.failed).toEqual([]);
  });

  it("a node that does not answer is an error value, not an exception", async () => {
    const port = await freePort();
    const client = createPublicClient({ transport: http(`http://127.0.0.1:${port}`, { retryCount: 0 }) });
    expect(await factoryStatus(client, hot.address)).toMatchObject({ ok: false, error: "node_unreachable" });
    expect(await deployFactory({ client, signer: hot })).toMatchObject({ ok: false, error: "node_unreachable" });
    expect(await sendFlush({ client, signer: hot, items: [{ id: forwarderId("x"), token: null }] })).toMatchObject({
      ok: false,
      error: "node_unreachable",
    });
  });
});

describe("batches", () => {
  for (const size of [10, 50, MAX_FLUSH_BATCH]) {
    it(`${size} forwarders, paid in ETH and in both tokens, are deployed and emptied in one transaction`, async () => {
      const { noBool, standard } = tokens.get(base) as { noBool: Deployed; standard: Deployed };
      const items: FlushItem[] = [];
      const expected: { forwarder: Hex; token: Hex | null; amount: bigint }[] = [];
      const hotBefore = {
        noBool: await balanceOf(base, noBool, hot.address),
        standard: await balanceOf(base, standard, hot.address),
      };
      for (let i = 0; i < size; i++) {
        const id = forwarderId(`inv_batch_${size}_${i}`);
        const deposit = forwarderAddress(hot.address, id);
        const token = i % 3 === 0 ? null : i % 3 === 1 ? noBool : standard;
        const amount = BigInt(1000 + i);
        if (token === null) {
          await sendFrom(base, base.accounts[1] as HDAccount, { to: deposit, value: amount });
        } else {
          await mint(base, token, deposit, amount);
        }
        items.push({ id, token: token?.address ?? null });
        expected.push({ forwarder: getAddress(deposit), token: token?.address ?? null, amount });
      }
      const nonce = await base.client.getTransactionCount({ address: hot.address });
      const { outcome, receipt } = await flush(base, items);
      expect(await base.client.getTransactionCount({ address: hot.address })).toBe(nonce + 1);
      // The largest batch deploys and empties its forwarders in well under a third of a 30M-gas block.
      expect(receipt.gasUsed).toBeLessThan(BigInt(size) * 70_000n);
      expect(receipt.gasUsed).toBeLessThan(10_000_000n);
      expect(outcome).toEqual({ moved: expected, failed: [] });
      const sum = (t: Hex) => expected.filter((e) => e.token === t).reduce((n, e) => n + e.amount, 0n);
      expect(await balanceOf(base, noBool, hot.address)).toBe(hotBefore.noBool + sum(noBool.address));
      expect(await balanceOf(base, standard, hot.address)).toBe(hotBefore.standard + sum(standard.address));
      for (const e of expected) expect(await code(base, e.forwarder)).not.toBe("0x");
    }, 60_000);
  }
});
