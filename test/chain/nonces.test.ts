// No hot-wallet nonce is abandoned (product §19), against a local chain behind a proxy that refuses broadcasts: gas fundings and payouts are sent again until mined, and a nonce nothing will use is filled by a zero-value transfer to the hot wallet.
import type { Hex } from "viem";
import { parseEther, parseTransaction } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findPayout } from "../../src/store/payouts.ts";
import { SWEEP_MAX_ATTEMPTS } from "../../src/store/sweeps.ts";
import { CHAIN_PAYOUT_DEFAULTS, payoutChainsOf, runChainPayoutBatch } from "../../src/workers/chainPayouts.ts";
import { type LocalChain, SERVICE_MNEMONIC, type TestToken } from "../support/chain.ts";
import {
  asLegacyDerivedInvoice,
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  fillsOf,
  liveInvoice,
  liveMerchant,
  outboxOf,
  payer,
  scan,
  startLiveFixture,
  usdt,
} from "../support/live.ts";
import { admin, call, type TestServer } from "../support/server.ts";
import { type FundedMerchant, fundedMerchant, withdraw } from "../support/withdrawals.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
let clock = Date.now();

beforeAll(async () => {
  ({ chain, token, server } = await startLiveFixture());
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
    now: () => new Date(clock),
    ...CHAIN_PAYOUT_DEFAULTS,
    publicBaseUrl: server.config.publicBaseUrl,
    log: server.app.log,
  });
}

/** A scanner pass with every open sweep due now (their back-off skipped). */
async function scanWithSweepsDue() {
  await server.ctx.store.transaction((tx) =>
    tx.db.updateTable("sweeps").set({ next_attempt_at: "2000-01-01T00:00:00.000Z" }).execute(),
  );
  await scan(server);
}

/** A sweep's gas fundings in the outbox, oldest first. */
async function fundingsOf(sweepId: string) {
  return (await outboxOf(server, "funding")).filter((f) => f.purpose_id === sweepId);
}

async function nonceStatus() {
  const listed = await admin(server, "GET", "/networks");
  const ethereum = (listed.body as { network: string; payouts: Record<string, unknown> }[]).find(
    (n) => n.network === "ethereum",
  );
  return ethereum?.payouts ?? {};
}

async function ethMerchant(): Promise<FundedMerchant> {
  return fundedMerchant(server, "1", "ETH");
}

async function destinationOf(m: FundedMerchant): Promise<Hex> {
  const row = await server.ctx.store.db
    .selectFrom("withdrawal_methods")
    .select("address")
    .where("id", "=", m.methodId)
    .executeTakeFirstOrThrow();
  return row.address as Hex;
}

async function storedNextNonce(): Promise<number> {
  const row = await server.ctx.store.db
    .selectFrom("networks")
    .select("hot_nonce")
    .where("name", "=", "ethereum")
    .executeTakeFirstOrThrow();
  return Number(row.hot_nonce);
}

describe("no hot-wallet nonce is abandoned", () => {
  it("sends a gas funding and a payout again after the node refused their broadcasts past every attempt bound", async () => {
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hotAddress(), parseEther("2")));
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "20" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("20")));
    await chain.mine(CONFIRMATIONS);
    chain.setFault("refuse_broadcast");
    const payee = await ethMerchant();
    let requestId = "";
    try {
      // The sweep signs its gas funding (a hot-wallet nonce) and the node refuses it, again and again.
      for (let i = 0; i < SWEEP_MAX_ATTEMPTS + 3; i++) await scanWithSweepsDue();
      const [refused] = await server.ctx.store.db
        .selectFrom("sweeps")
        .selectAll()
        .where("invoice_id", "=", invoice.id)
        .execute();
      expect(refused).toMatchObject({ state: "funding" });
      expect(refused?.last_error).toMatch(/broadcast refused/);
      // A payout signed meanwhile takes the next nonce; its broadcast is refused too.
      const w = await withdraw(server, payee, { currency: "ETH", amount: "0.05" });
      expect(w.answer.status).toBe(200);
      requestId = w.requestId;
      await payoutBatch();
      expect(await findPayout(server.ctx.store, requestId)).toMatchObject({ state: "sent" });
      const status = await nonceStatus();
      expect(status).toMatchObject({ unminedNonces: 2, nonceGaps: 0 });
      expect(typeof status.oldestUnminedSince).toBe("string");
      const metrics = await call(server.baseUrl, "GET", "/metrics", {
        headers: { authorization: `Bearer ${server.adminToken}` },
      });
      expect(metrics.text).toContain('hot_wallet_unmined_nonces{network="ethereum"} 2');
      expect(metrics.text).toMatch(/hot_wallet_oldest_unmined_age_seconds\{network="ethereum"\} [0-9.]+/);
    } finally {
      chain.setFault("none");
    }
    // The node takes broadcasts again: both go out, in nonce order, and everything settles.
    for (let round = 0; round < 15; round++) {
      const payout = await findPayout(server.ctx.store, requestId);
      const sweep = await server.ctx.store.db
        .selectFrom("sweeps")
        .select("state")
        .where("invoice_id", "=", invoice.id)
        .executeTakeFirstOrThrow();
      if (payout?.state === "completed" && sweep.state === "completed") break;
      await scanWithSweepsDue();
      await payoutBatch();
      await chain.mine(1);
    }
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({ state: "completed" });
    const [sweep] = await server.ctx.store.db
      .selectFrom("sweeps")
      .selectAll()
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(sweep?.state).toBe("completed");
    expect(await chain.balance(await destinationOf(payee))).toBe(parseEther("0.05"));
    // Nonces are contiguous on chain: every nonce the service took is mined.
    expect(await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" })).toBe(
      await storedNextNonce(),
    );
    expect(await nonceStatus()).toMatchObject({ unminedNonces: 0, nonceGaps: 0, oldestUnminedSince: null });
    await auditAndExpect(server);
  });

  it("fills a nonce that no stored transaction will use with a zero-value transfer to the hot wallet, past the bound", async () => {
    // A nonce taken and lost (as a gas funding given up used to leave it): the chain waits at it.
    const hole = await storedNextNonce();
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("networks")
        .set({ hot_nonce: hole + 1 })
        .where("name", "=", "ethereum")
        .execute(),
    );
    const payee = await ethMerchant();
    const w = await withdraw(server, payee, { currency: "ETH", amount: "0.02" });
    expect(w.answer.status).toBe(200);
    await payoutBatch();
    await payoutBatch();
    await chain.mine(1);
    expect(await findPayout(server.ctx.store, w.requestId)).toMatchObject({ state: "sent" });
    expect(await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" })).toBe(hole);
    const seen = await nonceStatus();
    expect(seen).toMatchObject({ nonceGaps: 1, unminedNonces: 1 });
    expect(typeof seen.nonceGapSince).toBe("string");
    const metrics = await call(server.baseUrl, "GET", "/metrics", {
      headers: { authorization: `Bearer ${server.adminToken}` },
    });
    expect(metrics.text).toContain('hot_wallet_nonce_gaps{network="ethereum"} 1');
    // Within the bound nothing is filled; past it (the replacement delay, 180 s) the gap is filled.
    expect(await fillsOf(server)).toEqual([]);
    clock += 181_000;
    for (let round = 0; round < 10; round++) {
      if ((await findPayout(server.ctx.store, w.requestId))?.state === "completed") break;
      await payoutBatch();
      await chain.mine(1);
    }
    expect(await findPayout(server.ctx.store, w.requestId)).toMatchObject({ state: "completed" });
    const fills = await fillsOf(server);
    expect(fills.map((f) => [f.nonce, f.state])).toEqual([[hole, "confirmed"]]);
    const fill = await chain.client.getTransaction({ hash: fills[0]?.hash as Hex });
    expect([fill.to?.toLowerCase(), fill.value, fill.nonce]).toEqual([hotAddress().toLowerCase(), 0n, hole]);
    const gas = await server.ctx.store.db
      .selectFrom("ledger_movements")
      .select(["cause", "kind"])
      .where("cause_id", "=", fills[0]?.id ?? "")
      .execute();
    expect(gas).toEqual([{ cause: "nonce_fill", kind: "gas" }]);
    expect(await chain.balance(await destinationOf(payee))).toBe(parseEther("0.02"));
    expect(await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" })).toBe(
      await storedNextNonce(),
    );
    expect(await nonceStatus()).toMatchObject({ unminedNonces: 0, nonceGaps: 0 });
    await auditAndExpect(server);
  });

  it("replaces a nonce fill not mined in time at its nonce with a higher fee; the one mined is ledgered once", async () => {
    const hole = await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" });
    expect(await storedNextNonce()).toBe(hole);
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("networks")
        .set({ hot_nonce: hole + 1 })
        .where("name", "=", "ethereum")
        .execute(),
    );
    const fillsAt = async () => (await fillsOf(server)).filter((f) => f.nonce === hole);
    await chain.setAutomine(false);
    try {
      await payoutBatch();
      clock += 181_000;
      await payoutBatch();
      const [first] = await fillsAt();
      expect(first?.state).toBe("broadcast");
      // Within the replacement delay it is only broadcast again.
      await payoutBatch();
      expect(await fillsAt()).toHaveLength(1);
      clock += 181_000;
      await payoutBatch();
      const both = await fillsAt();
      expect(both.map((f) => f.state)).toEqual(["broadcast", "broadcast"]);
      const before = parseTransaction(both[0]?.raw as Hex);
      const after = parseTransaction(both[1]?.raw as Hex);
      expect([after.nonce, after.to, after.value ?? 0n]).toEqual([hole, before.to, 0n]);
      expect((after.maxFeePerGas ?? 0n) * 100n >= (before.maxFeePerGas ?? 0n) * 110n).toBe(true);
      expect((after.maxPriorityFeePerGas ?? 0n) * 100n >= (before.maxPriorityFeePerGas ?? 0n) * 110n).toBe(true);
    } finally {
      await chain.setAutomine(true);
    }
    // Mined, and settled once the network's confirmations deep.
    await chain.mine(CONFIRMATIONS);
    await payoutBatch();
    const settled = await fillsAt();
    expect(settled.map((f) => f.state)).toEqual(["replaced", "confirmed"]);
    const gas = await server.ctx.store.db
      .selectFrom("ledger_movements")
      .select(["cause", "cause_id"])
      .where("cause", "=", "nonce_fill")
      .where(
        "cause_id",
        "in",
        settled.map((f) => f.id),
      )
      .execute();
    expect(gas).toEqual([{ cause: "nonce_fill", cause_id: settled[1]?.id }]);
    expect(await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" })).toBe(hole + 1);
    expect(await nonceStatus()).toMatchObject({ unminedNonces: 0, nonceGaps: 0 });
    await auditAndExpect(server);
  });

  it("follows a signed gas funding while the node cannot give its receipt past every attempt bound, never failing it", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "7" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("7")));
    await chain.mine(CONFIRMATIONS);
    await chain.setAutomine(false);
    try {
      await scanWithSweepsDue();
      chain.setFault("no_receipts");
      for (let i = 0; i < SWEEP_MAX_ATTEMPTS + 3; i++) await scanWithSweepsDue();
      const [waiting] = await server.ctx.store.db
        .selectFrom("sweeps")
        .selectAll()
        .where("invoice_id", "=", invoice.id)
        .execute();
      expect(waiting).toMatchObject({ state: "funding" });
      expect(waiting?.attempts).toBeLessThan(SWEEP_MAX_ATTEMPTS);
    } finally {
      chain.setFault("none");
      await chain.setAutomine(true);
    }
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
    const [sweep] = await server.ctx.store.db
      .selectFrom("sweeps")
      .selectAll()
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(sweep?.state).toBe("completed");
    expect(await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" })).toBe(
      await storedNextNonce(),
    );
    await auditAndExpect(server);
  });

  it("replaces a gas funding not mined in time at its nonce with a higher fee; its age is its first signing", async () => {
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hotAddress(), parseEther("1")));
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "6" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("6")));
    await chain.mine(CONFIRMATIONS);
    const sweepRow = () =>
      server.ctx.store.db
        .selectFrom("sweeps")
        .selectAll()
        .where("invoice_id", "=", invoice.id)
        .executeTakeFirstOrThrow();
    const setReplaceAfter = (seconds: number) =>
      server.ctx.store.transaction((tx) =>
        tx.db
          .updateTable("network_payout_settings")
          .set({ replace_after_seconds: seconds })
          .where("network", "=", "ethereum")
          .execute(),
      );
    let original: { hash: string; raw: Hex };
    await chain.setAutomine(false);
    try {
      // The funding is signed and sits in the node's pool (nothing is mined).
      await scanWithSweepsDue();
      const signed = await sweepRow();
      expect(signed.state).toBe("funding");
      const [first, ...others] = await fundingsOf(signed.id);
      expect(others).toEqual([]);
      original = { hash: first?.hash as string, raw: first?.raw as Hex };
      const signedBy = new Date().toISOString();
      await new Promise((resolve) => setTimeout(resolve, 20));
      // Looked at again and again: its sweep row changes, not the age of its unmined nonce.
      await scanWithSweepsDue();
      await scanWithSweepsDue();
      expect((await sweepRow()).updated_at > signedBy).toBe(true);
      const seen = await nonceStatus();
      expect(seen).toMatchObject({ unminedNonces: 1, nonceGaps: 0 });
      expect(String(seen.oldestUnminedSince) <= signedBy).toBe(true);
      const metrics = await call(server.baseUrl, "GET", "/metrics", {
        headers: { authorization: `Bearer ${server.adminToken}` },
      });
      expect(metrics.text).toContain('hot_wallet_unmined_nonces{network="ethereum"} 1');
      expect(metrics.text).toContain('hot_wallet_nonce_gaps{network="ethereum"} 0');
      // Past the network's replacement delay: the next look replaces it at its nonce, higher fee.
      await setReplaceAfter(0);
      try {
        await scanWithSweepsDue();
      } finally {
        await setReplaceAfter(180);
      }
      const replaced = await sweepRow();
      expect(replaced.state).toBe("funding");
      // The replacement is a second outbox row at the funding's nonce, chained to the first (kept: it may still be mined).
      const both = await fundingsOf(replaced.id);
      expect(both.map((f) => [f.hash === original.hash, f.state])).toEqual([
        [true, "broadcast"],
        [false, "broadcast"],
      ]);
      expect(both[1]?.replaces_id).toBe(both[0]?.id);
      const before = parseTransaction(original.raw);
      const after = parseTransaction(both[1]?.raw as Hex);
      expect([after.nonce, after.to, after.value]).toEqual([before.nonce, before.to, before.value]);
      expect((after.maxFeePerGas ?? 0n) * 100n >= (before.maxFeePerGas ?? 0n) * 110n).toBe(true);
      expect((after.maxPriorityFeePerGas ?? 0n) * 100n >= (before.maxPriorityFeePerGas ?? 0n) * 110n).toBe(true);
      expect(String((await nonceStatus()).oldestUnminedSince) <= signedBy).toBe(true);
    } finally {
      await chain.setAutomine(true);
    }
    for (let round = 0; round < 10; round++) {
      if ((await sweepRow()).state === "completed") break;
      await chain.mine(1);
      await scanWithSweepsDue();
    }
    const sweep = await sweepRow();
    expect(sweep.state).toBe("completed");
    // The replacement was mined at the nonce; the replaced funding never was.
    const receiptOf = (hash: string) =>
      chain.client.request({ method: "eth_getTransactionReceipt", params: [hash as Hex] });
    const settled = await fundingsOf(sweep.id);
    expect(settled.map((f) => f.state)).toEqual(["replaced", "confirmed"]);
    expect(await receiptOf(settled[1]?.hash as string)).not.toBeNull();
    expect(await receiptOf(original.hash)).toBeNull();
    expect(await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" })).toBe(
      await storedNextNonce(),
    );
    expect(await nonceStatus()).toMatchObject({ unminedNonces: 0, nonceGaps: 0, oldestUnminedSince: null });
    await auditAndExpect(server);
  });

  it("sends a sweep whose gas funding's nonce a foreign transaction took back to be funded again, at a new nonce", async () => {
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hotAddress(), parseEther("1")));
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "5" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("5")));
    await chain.mine(CONFIRMATIONS);
    const sweepRow = () =>
      server.ctx.store.db
        .selectFrom("sweeps")
        .selectAll()
        .where("invoice_id", "=", invoice.id)
        .executeTakeFirstOrThrow();
    await chain.setAutomine(false);
    let taken: { nonce: number; hash: string };
    try {
      // The funding is signed and broadcast; the node then forgets it.
      await scanWithSweepsDue();
      const sweep = await sweepRow();
      expect(sweep.state).toBe("funding");
      const [funding] = await fundingsOf(sweep.id);
      taken = { nonce: funding?.nonce ?? -1, hash: funding?.hash ?? "" };
      await chain.dropPending();
    } finally {
      await chain.setAutomine(true);
    }
    // The hot wallet's key signs something else at that nonce, outside the service, and it is mined.
    const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
    expect(hot.address).toBe(hotAddress());
    const foreign = await hot.signTransaction({
      type: "eip1559",
      chainId: chain.chainId,
      nonce: taken.nonce,
      to: hot.address,
      value: 0n,
      gas: 21_000n,
      maxFeePerGas: parseEther("0.0000001"),
      maxPriorityFeePerGas: 1n,
    });
    await chain.waitForReceipt(await chain.client.request({ method: "eth_sendRawTransaction", params: [foreign] }));
    for (let round = 0; round < 10; round++) {
      if ((await sweepRow()).state === "completed") break;
      await chain.mine(1);
      await scanWithSweepsDue();
    }
    const sweep = await sweepRow();
    expect(sweep.state).toBe("completed");
    // The lost funding is replaced (the foreign transaction has its nonce); the new one, at the next free nonce, made it.
    const fundings = await fundingsOf(sweep.id);
    expect(fundings.map((f) => [f.hash === taken.hash, f.state])).toEqual([
      [true, "replaced"],
      [false, "confirmed"],
    ]);
    expect(fundings[0]?.last_error).toMatch(/foreign transaction/);
    expect(fundings[1]?.nonce).toBeGreaterThan(taken.nonce);
    expect(await token.balanceOf(await depositOf(server, invoice.id))).toBe(0n);
    expect(await chain.client.getTransactionCount({ address: hotAddress(), blockTag: "latest" })).toBe(
      await storedNextNonce(),
    );
    expect(await nonceStatus()).toMatchObject({ unminedNonces: 0, nonceGaps: 0 });
    await auditAndExpect(server);
  });
});
