// Live payouts against a local chain (anvil): ETH and token withdrawals end to end, a reverted transfer, an underpriced transaction replaced, an empty hot wallet funded later, crash points between signing, broadcasting and recording.
import { randomUUID } from "node:crypto";
import { encodeFunctionData, type Hex, keccak256, parseEther, toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcChainClient } from "../../src/chain/rpc.ts";
import type { ChainClient } from "../../src/domain/chain.ts";
import { hotTransactionsOf, nextHotNonce } from "../../src/store/hotTransactions.ts";
import { findPayout } from "../../src/store/payouts.ts";

const transactionsOfPayout = (tx: Parameters<typeof hotTransactionsOf>[0], key: string) =>
  hotTransactionsOf(tx, "payout", key);

import { CHAIN_PAYOUT_DEFAULTS, type PayoutChain, runChainPayoutBatch } from "../../src/workers/chainPayouts.ts";
import {
  compileTestToken,
  type LocalChain,
  SERVICE_MNEMONIC,
  startLocalChain,
  type TestToken,
} from "../support/chain.ts";
import { adjust, completedInvoice, feeFreeMerchant, invoiceStatus, refundCrypto } from "../support/refunds.ts";
import { admin, call, createMerchant, expectProblem, startTestServer, type TestServer } from "../support/server.ts";
import { balanceOf, expectLedgerBalanced, movementCount, withdraw } from "../support/withdrawals.ts";

let server: TestServer;
let chain: LocalChain;
let token: TestToken;
const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
const CONFIRMATIONS = 3;

beforeAll(async () => {
  [server, chain] = await Promise.all([startTestServer(), startLocalChain()]);
  token = await chain.deployToken({ decimals: 6 });
  const network = await admin(server, "PUT", "/networks/local", {
    chainId: chain.chainId,
    rpcUrl: chain.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status).toBe(200);
  // USDT pays out as the local token, ETH as the local chain's coin.
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("currencies")
      .set({ network: "local", contract_address: token.address })
      .where("ticker", "=", "USDT")
      .execute(),
  );
  await server.ctx.store.transaction((tx) =>
    tx.db.updateTable("currencies").set({ network: "local" }).where("ticker", "=", "ETH").execute(),
  );
}, 60_000);
afterAll(async () => {
  await server?.close();
  await chain?.close();
});

function payoutChain(
  overrides: Partial<PayoutChain> = {},
  client: ChainClient = rpcChainClient(chain.url),
): PayoutChain {
  return {
    network: "local",
    chainId: chain.chainId,
    confirmations: CONFIRMATIONS,
    client,
    hot,
    nativeCurrency: "ETH",
    maxFeePerGasWei: parseEther("0.0000005"), // 500 gwei
    replaceAfterMs: 60_000,
    ...overrides,
  };
}

let clock = Date.now();
/** Every info line the batches log, as its fields: what an operator follows money by. */
const infoLines: Record<string, unknown>[] = [];
const recordingLog = {
  info: (fields: object, message: string) => {
    infoLines.push({ ...fields, message });
  },
  warn: (fields: object, message: string) => server.app.log.warn(fields, message),
  error: (fields: object, message: string) => server.app.log.error(fields, message),
};
function batch(
  target: PayoutChain = payoutChain(),
  crashAt: "after_sign" | "after_broadcast" | null = null,
  on: TestServer = server,
) {
  return runChainPayoutBatch(on.ctx.store, [target], {
    now: () => new Date(clock),
    ...CHAIN_PAYOUT_DEFAULTS,
    publicBaseUrl: server.config.publicBaseUrl,
    log: recordingLog,
    crashAt,
  });
}

function newAddress(): Hex {
  return `0x${randomUUID().replaceAll("-", "")}${"ab".repeat(4)}` as Hex;
}

async function merchantWith(currency: string, funds: string, destination: Hex) {
  const m = await createMerchant(server);
  await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, { currency, amount: funds, memo: "test" });
  const method = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
    currency,
    address: destination,
  });
  expect(method.status).toBe(200);
  return { ...m, methodId: method.body.id as number };
}

async function fundHot(eth: string, usdt = 0n) {
  await chain.sendEth(chain.accounts[1] as Hex, hot.address, parseEther(eth));
  if (usdt > 0n) await chain.waitForReceipt(await token.mint(hot.address, usdt));
}

async function drainUntil(requestKey: string, state: string, rounds = 10) {
  for (let i = 0; i < rounds; i++) {
    const p = await findPayout(server.ctx.store, requestKey);
    if (p?.state === state) return p;
    await chain.mine(1);
    await batch();
  }
  return findPayout(server.ctx.store, requestKey);
}

describe("live payouts on a local chain", () => {
  it("takes the operator's fee cap and replacement delay with the network, and refuses a zero cap", async () => {
    const put = await admin(server, "PUT", "/networks/local", {
      chainId: chain.chainId,
      rpcUrl: chain.url,
      confirmations: CONFIRMATIONS,
      maxFeePerGasGwei: "250.5",
      replaceAfterSeconds: 90,
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ maxFeePerGasGwei: "250.5", replaceAfterSeconds: 90 });
    const listed = await admin(server, "GET", "/networks");
    expect(listed.body[0]).toMatchObject({ network: "local", maxFeePerGasGwei: "250.5", replaceAfterSeconds: 90 });
    const zero = await admin(server, "PUT", "/networks/local", {
      chainId: chain.chainId,
      rpcUrl: chain.url,
      maxFeePerGasGwei: "0.0",
    });
    expectProblem(zero, 400, "invalid_fee_cap");
    const restored = await admin(server, "PUT", "/networks/local", {
      chainId: chain.chainId,
      rpcUrl: chain.url,
      confirmations: CONFIRMATIONS,
    });
    expect(restored.body).toMatchObject({ maxFeePerGasGwei: "500", replaceAfterSeconds: 180 });
  });

  it("waits with an empty hot wallet, using no nonce, then sends oldest first once funded", async () => {
    const dest = newAddress();
    const m = await merchantWith("ETH", "1", dest);
    const first = await withdraw(server, m, { currency: "ETH", amount: "0.02" });
    const second = await withdraw(server, m, { currency: "ETH", amount: "0.03" });
    expect(first.answer.status).toBe(200);
    expect(second.answer.status).toBe(200);
    await batch();
    for (const w of [first, second]) {
      const p = await findPayout(server.ctx.store, w.requestId);
      expect(p).toMatchObject({ state: "queued", processorStatus: "awaiting_funds" });
      expect(await transactionsOfPayout(server.ctx.store, w.requestId)).toEqual([]);
    }
    expect(await nextHotNonce(server.ctx.store, "local")).toBeNull();
    const networks = await admin(server, "GET", "/networks");
    const local = (networks.body as { network: string; payouts: Record<string, unknown> }[]).find(
      (n) => n.network === "local",
    );
    expect(local?.payouts).toMatchObject({ awaitingFunds: 2, inFlight: 0, hotWalletNextNonce: null });
    expect(local?.payouts.oldestAwaitingSince).toBe((await findPayout(server.ctx.store, first.requestId))?.createdAt);
    const metrics = await call(server.baseUrl, "GET", "/metrics", {
      headers: { authorization: `Bearer ${server.adminToken}` },
    });
    expect(metrics.text).toContain('payouts_awaiting_funds{network="local"} 2');

    await fundHot("1", 1_000_000_000n);
    await batch();
    const [a] = await transactionsOfPayout(server.ctx.store, first.requestId);
    const [b] = await transactionsOfPayout(server.ctx.store, second.requestId);
    expect(a && b && b.nonce === a.nonce + 1).toBe(true);
    const settled = await drainUntil(second.requestId, "completed");
    expect(settled).toMatchObject({ state: "completed", processorStatus: "confirmed", processorTxId: b?.hash });
    expect((await findPayout(server.ctx.store, first.requestId))?.state).toBe("completed");
    expect(await chain.balance(dest)).toBe(parseEther("0.05"));
    expect(await movementCount(server, first.requestId, "network_fee")).toBe(1);
    await expectLedgerBalanced(server);
  });

  it("sends a token withdrawal and completes it after the confirmations, the gas in the operator's ledger", async () => {
    const dest = newAddress();
    const m = await merchantWith("USDT", "100", dest);
    const w = await withdraw(server, m, { currency: "USDT", amount: "12.5" });
    await batch();
    const sent = await findPayout(server.ctx.store, w.requestId);
    expect(sent).toMatchObject({ state: "sent" });
    expect(["broadcast", "mined"]).toContain(sent?.processorStatus);
    const settled = await drainUntil(w.requestId, "completed");
    expect(settled?.processorStatus).toBe("confirmed");
    expect(await token.balanceOf(dest)).toBe(12_500_000n);
    const [t] = await transactionsOfPayout(server.ctx.store, w.requestId);
    expect(t).toMatchObject({ state: "confirmed", receiptStatus: "success" });
    expect(await balanceOf(server, m.id, "USDT")).toBe("87.5");
    const fee = await server.ctx.store.db
      .selectFrom("ledger_entries")
      .innerJoin("ledger_movements", "ledger_movements.id", "ledger_entries.movement_id")
      .select(["ledger_entries.account", "ledger_entries.currency", "ledger_entries.amount"])
      .where("ledger_movements.cause_id", "=", w.requestId)
      .where("ledger_movements.kind", "=", "network_fee")
      .execute();
    const gas = (t?.gasUsed ?? 0n) * (t?.effectiveGasPrice ?? 0n);
    expect(fee).toEqual(
      expect.arrayContaining([
        { account: "operator:network_fees", currency: "ETH", amount: (-gas).toString() },
        { account: "external:chain_gas", currency: "ETH", amount: gas.toString() },
      ]),
    );
    await expectLedgerBalanced(server);
  });

  it("fails a token transfer that reverts on chain and credits the debit back once", async () => {
    const dest = newAddress();
    const m = await merchantWith("USDT", "50", dest);
    await chain.setAutomine(false);
    try {
      const w = await withdraw(server, m, { currency: "USDT", amount: "20" });
      expect(w.answer.status).toBe(200);
      await batch();
      expect((await findPayout(server.ctx.store, w.requestId))?.processorStatus).toBe("broadcast");
      // Blocked after the estimate, ahead of the payout in the next block: the transfer reverts when mined.
      const deployer = chain.accounts[0] as Hex;
      await chain.client.request({
        method: "eth_sendTransaction" as never,
        params: [
          {
            from: deployer,
            to: token.address,
            data: encodeFunctionData({ abi: compileTestToken().abi, functionName: "setBlocked", args: [dest, true] }),
            gas: toHex(200_000),
            maxFeePerGas: toHex(parseEther("0.000001")),
            maxPriorityFeePerGas: toHex(parseEther("0.0000009")),
          },
        ] as never,
      });
    } finally {
      await chain.setAutomine(true);
    }
    await chain.mine(1);
    const [w] = await server.ctx.store.db
      .selectFrom("payouts")
      .select("request_id")
      .where("merchant_id", "=", m.id)
      .execute();
    const key = w?.request_id ?? "";
    const settled = await drainUntil(key, "failed");
    expect(settled).toMatchObject({ state: "failed", processorStatus: "reverted" });
    expect(await balanceOf(server, m.id, "USDT")).toBe("50");
    expect(await movementCount(server, key, "reversal")).toBe(1);
    expect(await movementCount(server, key, "network_fee")).toBe(1);
    await batch();
    expect(await movementCount(server, key, "reversal")).toBe(1);
    expect(await token.balanceOf(dest)).toBe(0n);
    await expectLedgerBalanced(server);
  });

  it("replaces a transaction not mined in time at the same nonce with higher fees: one payout, one transfer", async () => {
    const dest = newAddress();
    const m = await merchantWith("ETH", "1", dest);
    await chain.setAutomine(false);
    let key = "";
    try {
      const w = await withdraw(server, m, { currency: "ETH", amount: "0.01" });
      key = w.requestId;
      await batch();
      clock += 61_000;
      await batch();
      const txs = await transactionsOfPayout(server.ctx.store, key);
      expect(txs).toHaveLength(2);
      const [first, second] = txs;
      expect(second?.nonce).toBe(first?.nonce);
      expect(second?.replacesId).toBe(first?.id);
      expect((second?.fees.maxFeePerGas ?? 0n) * 100n >= (first?.fees.maxFeePerGas ?? 0n) * 110n).toBe(true);
      expect((await findPayout(server.ctx.store, key))?.processorTxId).toBe(second?.hash);
    } finally {
      await chain.setAutomine(true);
    }
    await chain.mine(1);
    const settled = await drainUntil(key, "completed");
    const txs = await transactionsOfPayout(server.ctx.store, key);
    const confirmed = txs.filter((t) => t.state === "confirmed");
    expect(confirmed).toHaveLength(1);
    expect(txs.filter((t) => t.state === "replaced")).toHaveLength(1);
    expect(settled?.processorTxId).toBe(confirmed[0]?.hash);
    expect(await chain.balance(dest)).toBe(parseEther("0.01"));
    await expectLedgerBalanced(server);
  });

  it("settles a replacement mined after the first transaction's block was reorganised away", async () => {
    await fundHot("0.1");
    const dest = newAddress();
    const m = await merchantWith("ETH", "1", dest);
    const before = await chain.snapshot();
    await chain.setAutomine(false);
    let key = "";
    try {
      key = (await withdraw(server, m, { currency: "ETH", amount: "0.01" })).requestId;
      await batch();
      clock += 61_000;
      await batch();
    } finally {
      // The pool is emptied before mining resumes: anvil mines what is pending in the background,
      // which could land after the revert below and take the nonce the test sends again.
      await chain.dropPending();
      await chain.setAutomine(true);
    }
    const [first, second] = await transactionsOfPayout(server.ctx.store, key);
    expect(second?.replacesId).toBe(first?.id);
    const sendRaw = (raw: string | undefined) =>
      chain.client.request({ method: "eth_sendRawTransaction", params: [raw as Hex] });
    // The first transaction is mined (the pool is emptied by going back first) and recorded as
    // mined, not yet deep enough...
    await chain.revert(before);
    const beforeFirst = await chain.snapshot();
    await chain.waitForReceipt(await sendRaw(first?.raw));
    await batch();
    expect((await transactionsOfPayout(server.ctx.store, key)).map((t) => t.state)).toEqual(["mined", "broadcast"]);
    // ...then its block is reorganised away and the replacement is mined instead: the payout
    // completes with it, the stale first transaction becomes replaced, and nothing is left stuck.
    await chain.revert(beforeFirst);
    await chain.waitForReceipt(await sendRaw(second?.raw));
    const settled = await drainUntil(key, "completed");
    const txs = await transactionsOfPayout(server.ctx.store, key);
    expect(txs.map((t) => t.state)).toEqual(["replaced", "confirmed"]);
    expect(settled).toMatchObject({ state: "completed", processorTxId: second?.hash });
    expect(await chain.balance(dest)).toBe(parseEther("0.01"));
    await expectLedgerBalanced(server);
  });

  it("follows every other payout when one cannot be followed, and signs new ones meanwhile", async () => {
    await fundHot("0.1");
    const dest = newAddress();
    const m = await merchantWith("ETH", "1", dest);
    const stuck = (await withdraw(server, m, { currency: "ETH", amount: "0.01" })).requestId;
    const fine = (await withdraw(server, m, { currency: "ETH", amount: "0.02" })).requestId;
    await batch();
    const [stuckTx] = await transactionsOfPayout(server.ctx.store, stuck);
    // A bug or a fault that throws for one payout's transaction, not a node error answered as a value.
    const rpc = rpcChainClient(chain.url);
    const faulty: ChainClient = {
      ...rpc,
      receipt: async (hash) => {
        if (hash === stuckTx?.hash) throw new Error("unexpected fault");
        return rpc.receipt(hash);
      },
    };
    const late = (await withdraw(server, m, { currency: "ETH", amount: "0.03" })).requestId;
    for (let i = 0; i < CONFIRMATIONS + 2; i++) {
      await chain.mine(1);
      await expect(batch(payoutChain({}, faulty))).rejects.toThrow("unexpected fault");
    }
    expect((await findPayout(server.ctx.store, fine))?.state).toBe("completed");
    expect((await transactionsOfPayout(server.ctx.store, late)).length).toBe(1);
    expect((await findPayout(server.ctx.store, stuck))?.state).toBe("sent");
    // Once the fault is gone, the held-back payout settles too.
    expect((await drainUntil(stuck, "completed"))?.state).toBe("completed");
    expect((await drainUntil(late, "completed"))?.state).toBe("completed");
    expect(await chain.balance(dest)).toBe(parseEther("0.06"));
    await expectLedgerBalanced(server);
  });

  it("broadcasts a transaction the node dropped again, byte for byte", async () => {
    const dest = newAddress();
    const m = await merchantWith("ETH", "1", dest);
    const key = (await withdraw(server, m, { currency: "ETH", amount: "0.01" })).requestId;
    // A node that takes the transaction and then loses it (restarted, evicted it from its pool).
    const rpc = rpcChainClient(chain.url);
    const forgetful: ChainClient = { ...rpc, sendRawTransaction: async (raw) => ({ ok: true, value: keccak256(raw) }) };
    await batch(payoutChain({}, forgetful));
    const [sent] = await transactionsOfPayout(server.ctx.store, key);
    expect(sent).toMatchObject({ state: "broadcast", broadcastCount: 1 });
    expect(await chain.client.getTransactionCount({ address: hot.address, blockTag: "pending" })).toBe(sent?.nonce);
    await batch();
    const [again] = await transactionsOfPayout(server.ctx.store, key);
    expect(again, again?.lastError ?? "").toMatchObject({ hash: sent?.hash, raw: sent?.raw, broadcastCount: 2 });
    expect(await drainUntil(key, "completed")).toMatchObject({ state: "completed", processorTxId: sent?.hash });
    expect(await transactionsOfPayout(server.ctx.store, key)).toHaveLength(1);
    expect(await chain.balance(dest)).toBe(parseEther("0.01"));
    await expectLedgerBalanced(server);
  });

  it("sends a crypto refund to the payer's address and moves the invoice to refunded", async () => {
    const m = await feeFreeMerchant(server);
    const payer = newAddress();
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "30" }, [{ fromAddress: payer }]);
    await adjust(server, m.id, "USDT", "1");
    const refund = await refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true });
    expect(refund.answer.status, refund.answer.text).toBe(200);
    await batch();
    const settled = await drainUntil(refund.requestId.toLowerCase(), "completed");
    expect(settled).toMatchObject({ state: "completed", processorStatus: "confirmed" });
    expect(await token.balanceOf(payer)).toBe(30_000_000n);
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refunded");
    await expectLedgerBalanced(server);
  });

  it("shows a payout's transactions with their on-chain state and checks an operator's outcome against the chain", async () => {
    const dest = newAddress();
    const m = await merchantWith("ETH", "1", dest);
    const setAside = (key: string) =>
      server.ctx.store.transaction((tx) =>
        tx.db.updateTable("payouts").set({ state: "needs_reconciliation" }).where("request_id", "=", key).execute(),
      );
    await chain.setAutomine(false);
    let pending = "";
    try {
      pending = (await withdraw(server, m, { currency: "ETH", amount: "0.01" })).requestId;
      await batch();
      await setAside(pending);
      const detail = await admin(server, "GET", `/payouts/${pending}`);
      expect(detail.status).toBe(200);
      expect(detail.body.transactions).toHaveLength(1);
      expect(detail.body.transactions[0]).toMatchObject({ state: "broadcast", onChain: { receipt: null } });
      expect(detail.body.transactions[0].raw).toMatch(/^0x02/);
      // Not mined and its nonce still free: it can still be mined, so neither outcome is accepted yet.
      expectProblem(
        await admin(server, "POST", `/payouts/${pending}/outcome`, { status: "failed" }),
        409,
        "payout_transaction_pending",
      );
      expectProblem(
        await admin(server, "POST", `/payouts/${pending}/outcome`, { status: "completed" }),
        409,
        "payout_transaction_pending",
      );
    } finally {
      await chain.setAutomine(true);
    }
    await chain.mine(1);
    const detail = await admin(server, "GET", `/payouts/${pending}`);
    const hash = detail.body.transactions[0].hash;
    expect(detail.body.transactions[0].onChain).toMatchObject({
      receipt: "success",
      confirmations: expect.stringMatching(/^[1-9]/),
    });
    expectProblem(
      await admin(server, "POST", `/payouts/${pending}/outcome`, { status: "failed" }),
      409,
      "payout_outcome_contradicts_chain",
    );
    expectProblem(
      await admin(server, "POST", `/payouts/${pending}/outcome`, { status: "completed", txId: `0x${"1".repeat(64)}` }),
      409,
      "payout_outcome_contradicts_chain",
    );
    const done = await admin(server, "POST", `/payouts/${pending}/outcome`, { status: "completed" });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ state: "completed", processorTxId: hash });
    expect(await movementCount(server, pending, "reversal")).toBe(0);
    expect(await balanceOf(server, m.id, "ETH")).toBe("0.99");
    await expectLedgerBalanced(server);
  });

  it("broadcasts the stored transaction again after a crash before or after its broadcast, never a new one", async () => {
    const dest = newAddress();
    const m = await merchantWith("ETH", "1", dest);
    // A crash after signing: the node never heard of it. A node that is down stands in for the kill here;
    // test/crash/crash.ts kills a real process at both points.
    const down: ChainClient = {
      ...rpcChainClient(chain.url),
      sendRawTransaction: async () => ({ ok: false, error: "node_unreachable" }),
    };
    const w = await withdraw(server, m, { currency: "ETH", amount: "0.01" });
    await batch(payoutChain({}, down));
    const [stored] = await transactionsOfPayout(server.ctx.store, w.requestId);
    expect(stored).toMatchObject({ state: "signed" });
    await batch();
    const settled = await drainUntil(w.requestId, "completed");
    const txs = await transactionsOfPayout(server.ctx.store, w.requestId);
    expect(txs.map((t) => t.hash)).toEqual([stored?.hash]);
    expect(settled?.processorTxId).toBe(stored?.hash);
    expect(await chain.balance(dest)).toBe(parseEther("0.01"));
    await expectLedgerBalanced(server);
  });
  it("logs a transaction mined and confirmed once when two processes follow it at the same time", async () => {
    const m = await merchantWith("ETH", "1", newAddress());
    const w = await withdraw(server, m, { currency: "ETH", amount: "0.01" });
    let [t] = await transactionsOfPayout(server.ctx.store, w.requestId);
    for (let i = 0; i < 5 && t === undefined; i++) {
      await batch();
      [t] = await transactionsOfPayout(server.ctx.store, w.requestId);
    }
    await chain.waitForReceipt(t?.hash as Hex);
    // Both read it broadcast, then mined: one records each step; the other's compare-and-set finds it done.
    await Promise.all([batch(), batch()]);
    await chain.mine(CONFIRMATIONS);
    await Promise.all([batch(), batch()]);
    expect((await findPayout(server.ctx.store, w.requestId))?.state).toBe("completed");
    expect(infoLines.filter((l) => l.hash === t?.hash).map((l) => l.hot)).toEqual([
      "stored",
      "broadcast",
      "mined",
      "confirmed",
    ]);
  });

  it("logs a payout's transaction once when stored, broadcast, mined and confirmed, without its raw bytes", async () => {
    const m = await merchantWith("ETH", "1", newAddress());
    const w = await withdraw(server, m, { currency: "ETH", amount: "0.01" });
    expect((await drainUntil(w.requestId, "completed"))?.state).toBe("completed");
    const [t] = await transactionsOfPayout(server.ctx.store, w.requestId);
    const lines = infoLines.filter((l) => l.hash === t?.hash);
    expect(lines.map((l) => l.hot)).toEqual(["stored", "broadcast", "mined", "confirmed"]);
    expect(lines[0]).toMatchObject({
      network: "local",
      purpose: "payout",
      nonce: t?.nonce,
      value: "10000000000000000",
    });
    expect(JSON.stringify(lines)).not.toContain(String(t?.raw).slice(2, 40));
  });
});
