// The chain rail under faults (product §19), against a local chain: the payout planner reserves the ETH of an open sweep gas funding, after a rewind the first block read must follow the fork block's hash, and a receipt the node answers late is not a lost nonce.
import { formatEther, type Hex, parseEther, parseTransaction } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcChainClient } from "../../src/chain/rpc.ts";
import type { ChainClient } from "../../src/domain/chain.ts";
import { initialFees } from "../../src/domain/hotTransaction.ts";
import { findNetwork } from "../../src/store/networks.ts";
import { findPayout } from "../../src/store/payouts.ts";
import { capInWei, findPayoutSettings } from "../../src/store/payoutTransactions.ts";
import { CHAIN_PAYOUT_DEFAULTS, payoutChainsOf, runChainPayoutBatch } from "../../src/workers/chainPayouts.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import { balances } from "../support/invoices.ts";
import {
  asLegacyDerivedInvoice,
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  liveInvoice,
  liveMerchant,
  outboxOf,
  payer,
  paymentRows,
  scan,
  startLiveServer,
  usdt,
} from "../support/live.ts";
import type { TestServer } from "../support/server.ts";
import { fundedMerchant, withdraw } from "../support/withdrawals.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
/** Runs once, after the node answered the next block(n) call with this number (then disarms). */
let afterBlock: { number: bigint; run: () => Promise<void> } | null = null;
/** While true the node answers every receipt as not found: its receipt index lags its head. */
let receiptsLag = false;

/** The service's node client, with a hook to change the chain right after it answered one block. */
function hookedClient(url: string): ChainClient {
  const inner = rpcChainClient(url, { timeoutMs: 1500 });
  return {
    ...inner,
    receipt: async (hash) => (receiptsLag ? { ok: true, value: null } : inner.receipt(hash)),
    block: async (n) => {
      const answer = await inner.block(n);
      const hook = afterBlock;
      if (hook !== null && hook.number === n) {
        afterBlock = null;
        await hook.run();
      }
      return answer;
    },
  };
}

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  server = await startLiveServer(chain, token, { chainClientFactory: hookedClient });
  await token.mint(payer(chain, 1), usdt("1000"));
  await scan(server);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

function hotAddress(): Hex {
  const hot = server.ctx.wallet?.hotAddress;
  if (!hot) throw new Error("no wallet");
  return hot;
}

async function payoutBatch() {
  return runChainPayoutBatch(server.ctx.store, await payoutChainsOf(server.ctx), {
    now: () => new Date(),
    ...CHAIN_PAYOUT_DEFAULTS,
    publicBaseUrl: server.config.publicBaseUrl,
    log: server.app.log,
  });
}

async function scanWithSweepsDue() {
  await server.ctx.store.transaction((tx) =>
    tx.db.updateTable("sweeps").set({ next_attempt_at: "2000-01-01T00:00:00.000Z" }).execute(),
  );
  await scan(server);
}

/** The most the planner counts an ETH payout of `amount` to cost (its value and all its gas), as it computes it. */
async function payoutWorstCost(destination: Hex, amount: bigint): Promise<bigint> {
  const client = server.ctx.chains.for("ethereum", chain.url);
  const [estimate, fees, settings] = await Promise.all([
    client.estimateGas({ from: hotAddress(), to: destination, value: amount }),
    client.fees(),
    findPayoutSettings(server.ctx.store, "ethereum"),
  ]);
  if (!estimate.ok || !fees.ok) throw new Error("the node did not answer");
  const { gasPrice, maxFeePerGas, maxPriorityFeePerGas } = fees.value;
  const fee = initialFees(
    { maxFeePerGas: maxFeePerGas ?? gasPrice, maxPriorityFeePerGas: maxPriorityFeePerGas ?? gasPrice },
    capInWei(settings.maxFeePerGasGwei),
  );
  return amount + ((estimate.value * 120n + 99n) / 100n) * fee.maxFeePerGas;
}

describe("the payout planner", () => {
  it("reserves the value and full gas of an open sweep gas funding: a payout it would leave uncovered waits", async () => {
    // The hot wallet starts empty: 0.05 ETH is all it has.
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hotAddress(), parseEther("0.05")));
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("10")));
    await chain.mine(CONFIRMATIONS);
    const payee = await fundedMerchant(server, "1", "ETH");
    const method = await server.ctx.store.db
      .selectFrom("withdrawal_methods")
      .select("address")
      .where("id", "=", payee.methodId)
      .executeTakeFirstOrThrow();
    const destination = method.address as Hex;
    let amount = 0n;
    let requestId = "";
    await chain.setAutomine(false);
    try {
      // The sweep signs its gas funding; it waits in the node's pool (the balance does not show it yet).
      await scanWithSweepsDue();
      const sweep = await server.ctx.store.db
        .selectFrom("sweeps")
        .selectAll()
        .where("invoice_id", "=", invoice.id)
        .executeTakeFirstOrThrow();
      expect(sweep.state).toBe("funding");
      // Its funding is the outbox's; what it may cost is its value and its full gas at its fee cap.
      const [row] = (await outboxOf(server, "funding")).filter((f) => f.purpose_id === sweep.id);
      const funding = parseTransaction(row?.raw as Hex);
      const fundingCost = (funding.value ?? 0n) + (funding.gas ?? 0n) * (funding.maxFeePerGas ?? 0n);
      expect(fundingCost).toBeGreaterThan(funding.value ?? 0n);
      const balance = await chain.balance(hotAddress());
      // A payout the balance covers alone, not beside the funding: half the funding's cost short.
      const unit = 10n ** 9n;
      amount = ((balance - (await payoutWorstCost(destination, 0n)) - fundingCost / 2n) / unit) * unit;
      const cost = await payoutWorstCost(destination, amount);
      expect(cost <= balance && cost + fundingCost > balance).toBe(true);
      const w = await withdraw(server, payee, { currency: "ETH", amount: formatEther(amount) });
      expect(w.answer.status).toBe(200);
      requestId = w.requestId;
      await payoutBatch();
      expect(await findPayout(server.ctx.store, requestId)).toMatchObject({
        state: "queued",
        processorStatus: "awaiting_funds",
      });
      expect(
        await server.ctx.store.db.selectFrom("hot_transactions").selectAll().where("purpose", "=", "payout").execute(),
      ).toEqual([]);
    } finally {
      await chain.setAutomine(true);
    }
    // The funding is mined and the sweep done: the balance now really lacks it; once topped up, the payout goes.
    for (let round = 0; round < 10; round++) {
      const sweep = await server.ctx.store.db
        .selectFrom("sweeps")
        .select("state")
        .where("invoice_id", "=", invoice.id)
        .executeTakeFirstOrThrow();
      if (sweep.state === "completed") break;
      await chain.mine(1);
      await scanWithSweepsDue();
    }
    await payoutBatch();
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({ state: "queued" });
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hotAddress(), parseEther("0.01")));
    for (let round = 0; round < 10; round++) {
      if ((await findPayout(server.ctx.store, requestId))?.state === "completed") break;
      await payoutBatch();
      await chain.mine(1);
    }
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({ state: "completed" });
    expect(await chain.balance(destination)).toBe(amount);
    const stored = await server.ctx.store.db
      .selectFrom("networks")
      .select("hot_nonce")
      .where("name", "=", "ethereum")
      .executeTakeFirstOrThrow();
    expect(await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" })).toBe(
      Number(stored.hot_nonce),
    );
    await auditAndExpect(server);
  });
});

describe("after a rewind", () => {
  it("the first block read must follow the fork block's hash: a chain that moved again is not taken", async () => {
    await scan(server);
    const beforePayment = await chain.snapshot();
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    // The payment's block k, then one more: the payment is seen, not yet confirmed.
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("10")));
    const k = await chain.head();
    const atK = await chain.snapshot();
    await chain.mine(1);
    await scan(server);
    expect(await paymentRows(server, invoice.id)).toHaveLength(1);
    // A reorganisation above k: the scanner finds the fork at k (its block unchanged)...
    await chain.revert(atK);
    await chain.mine(2);
    // ...and right after it read block k, the chain moves again, deeper: block k (and the payment) is replaced.
    afterBlock = {
      number: k,
      run: async () => {
        await chain.revert(beforePayment);
        await chain.mine(3);
      },
    };
    await scan(server);
    expect(afterBlock).toBeNull();
    const refused = (await findNetwork(server.ctx.store, server.ctx.box, "ethereum"))?.nodeError ?? "";
    // The next passes find the deeper fork: the payment that no block holds any more is gone, never credited.
    for (let round = 0; round < CONFIRMATIONS + 2; round++) {
      await chain.mine(1);
      await scan(server);
    }
    expect(await paymentRows(server, invoice.id)).toEqual([]);
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
    const after = await findNetwork(server.ctx.store, server.ctx.box, "ethereum");
    const head = await chain.client.getBlock({ blockNumber: after?.scannedBlock ?? 0n });
    expect(after?.scannedHash).toBe(head.hash);
    // The batch that met the moved chain stopped on it (and wrote nothing past the rewind).
    expect(refused).toMatch(/does not follow the checkpoint/);
    await auditAndExpect(server);
  });
});

describe("a node whose receipts lag its head", () => {
  // Found by the seeded simulation (docs/simulation.md): a mined payout whose receipt the node did
  // not answer yet, behind a nonce the chain had used, was taken for a nonce lost to a foreign
  // transaction: its transaction marked replaced and the payout sent to the operator.
  it("does not take a nonce our transaction used for a foreign one, however late its receipt", async () => {
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), hotAddress(), parseEther("1")));
    const payee = await fundedMerchant(server, "1", "ETH");
    const w = await withdraw(server, payee, { currency: "ETH", amount: "0.01" });
    expect(w.answer.status).toBe(200);
    receiptsLag = true;
    try {
      await payoutBatch();
      const [row] = (await outboxOf(server, "payout")).filter((r) => r.purpose_id === w.requestId);
      expect(row?.state).toBe("broadcast");
      // Mined (the node's nonce is past it), but the node answers no receipt yet.
      await chain.mine(1);
      await payoutBatch();
      expect((await findPayout(server.ctx.store, w.requestId))?.state).toBe("sent");
      expect(
        (await outboxOf(server, "payout")).filter((r) => r.purpose_id === w.requestId).map((r) => r.state),
      ).toEqual(["broadcast"]);
    } finally {
      receiptsLag = false;
    }
    await chain.mine(CONFIRMATIONS);
    await payoutBatch();
    expect((await findPayout(server.ctx.store, w.requestId))?.state).toBe("completed");
    await auditAndExpect(server);
  });
});
