// The hot wallet behind a remote signer (product §24, docs/signer.md): a live withdrawal signed over eth_signTransaction lands once; a signer that signs for another key or another transaction, hangs, answers garbage or is down gets nothing broadcast and the payout waits; the start-up check; a network's own signer down at start (the service serves, payouts wait, then go); derived deposits wait for the mnemonic.
import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import { type Hex, parseEther, parseUnits } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fillNonceGaps } from "../../src/chain/nonceGaps.ts";
import { probeSigner, remoteSigner } from "../../src/chain/remoteSigner.ts";
import { NO_DEPOSIT_KEYS } from "../../src/chain/sweeper.ts";
import type { SignerErrorCode } from "../../src/domain/chain.ts";
import { invoiceDepositAddress } from "../../src/domain/forwarders.ts";
import { hotTransactionsOf, nextHotNonce } from "../../src/store/hotTransactions.ts";
import { findPayout } from "../../src/store/payouts.ts";

const transactionsOfPayout = (tx: Parameters<typeof hotTransactionsOf>[0], key: string) =>
  hotTransactionsOf(tx, "payout", key);

import { CHAIN_PAYOUT_DEFAULTS, payoutChainsOf, runChainPayoutBatch } from "../../src/workers/chainPayouts.ts";
import { startAnvil } from "../support/anvil.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import {
  asLegacyDerivedInvoice,
  CONFIRMATIONS,
  depositOf,
  fillsOf,
  liveMerchant,
  mineAndScan,
  payer,
  scan,
  startLiveServer,
} from "../support/live.ts";
import { deadSignerUrl, type SignerMode, type SignerProxy, startSignerProxy } from "../support/remoteSigner.ts";
import {
  admin,
  call,
  createMerchant,
  createTestDatabase,
  merchant,
  startTestServer,
  type TestServer,
} from "../support/server.ts";
import { expectLedgerBalanced, withdraw } from "../support/withdrawals.ts";

let chain: LocalChain;
let token: TestToken;
let proxy: SignerProxy;
let server: TestServer;
/** The hot wallet: an unlocked account of the node, which signs for it (the remote signer). */
let hot: Hex;
/** Another unlocked account: what a misbehaving signer signs with. */
let other: Hex;
const PASSWORD = "s3cret-signer-password";

/** The signer's settings; the URL carries credentials, as a real one may. */
function signerEnv(url: string, address: Hex = hot): Record<string, string> {
  const withCredentials = url.replace("http://", `http://ops:${PASSWORD}@`);
  return { WALLET_MNEMONIC: "", SIGNER_URL: withCredentials, SIGNER_ADDRESS: address, SIGNER_TIMEOUT_MS: "500" };
}

beforeAll(async () => {
  // Chain id 1: the start-up check of a store with no network yet probes chain 1, and anvil signs
  // only for its own chain.
  chain = await startLocalChain({ chainId: 1 });
  token = await chain.deployToken();
  hot = chain.accounts[3] as Hex;
  other = chain.accounts[4] as Hex;
  proxy = await startSignerProxy(chain.url, other);
  server = await startLiveServer(chain, token, { env: signerEnv(proxy.url) });
  await chain.waitForReceipt(await token.mint(hot, parseUnits("1000", token.decimals)));
}, 60_000);
afterAll(async () => {
  await server?.close();
  await proxy?.close();
  await chain?.close();
});

function newAddress(): Hex {
  return `0x${randomUUID().replaceAll("-", "")}${"cd".repeat(4)}` as Hex;
}

/** A merchant with 100 USDT and a withdrawal method to a fresh address. */
async function merchantPayingTo(destination: Hex, on: TestServer = server) {
  const m = await createMerchant(on);
  await admin(on, "POST", `/merchants/${m.id}/balance-adjustments`, { currency: "USDT", amount: "100", memo: "t" });
  const method = await admin(on, "POST", `/merchants/${m.id}/withdrawal-methods`, {
    currency: "USDT",
    address: destination,
  });
  expect(method.status, method.text).toBe(200);
  return { ...m, methodId: method.body.id as number };
}

/** A logger that keeps the warnings (the worker's only report of a signer that did not sign). */
function capturingLog() {
  const warnings: { fields: Record<string, unknown>; message: string }[] = [];
  const log = {
    level: "warn",
    warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }),
    info: () => {},
    error: () => {},
    debug: () => {},
    trace: () => {},
    fatal: () => {},
    silent: () => {},
    child: () => log,
  };
  return { log: log as unknown as FastifyBaseLogger, warnings };
}

/** One payout batch of the server's chains, its hot signer replaced when asked. */
async function batch(log: FastifyBaseLogger, signerUrl: string | null = null, timeoutMs = 500) {
  const chains = (await payoutChainsOf(server.ctx)).map((c) =>
    signerUrl === null ? c : { ...c, hot: remoteSigner({ url: signerUrl, address: hot, timeoutMs }) },
  );
  return runChainPayoutBatch(server.ctx.store, chains, {
    now: () => new Date(),
    ...CHAIN_PAYOUT_DEFAULTS,
    rail: "evm",
    publicBaseUrl: server.config.publicBaseUrl,
    log,
  });
}

async function drainUntilCompleted(requestKey: string) {
  for (let round = 0; round < 10; round++) {
    if ((await findPayout(server.ctx.store, requestKey))?.state === "completed") break;
    await batch(capturingLog().log);
    await chain.mine(1);
  }
  return findPayout(server.ctx.store, requestKey);
}

async function pendingNonce(address: Hex): Promise<number> {
  return chain.client.getTransactionCount({ address, blockTag: "pending" });
}

describe("a remote signer", () => {
  it("signs a live withdrawal that lands on the chain once and completes; no phrase in the process", async () => {
    expect(server.ctx.wallet?.hotAddress).toBe(hot);
    expect(server.ctx.wallet?.deposits).toBeNull();
    expect(server.config.walletMnemonic).toBeNull();
    expect(JSON.stringify(server.config)).not.toContain(PASSWORD);
    const dest = newAddress();
    const m = await merchantPayingTo(dest);
    const w = await withdraw(server, m, { currency: "USDT", amount: "12.5" });
    expect(w.answer.status, w.answer.text).toBe(200);
    const settled = await drainUntilCompleted(w.requestId);
    expect(settled).toMatchObject({ state: "completed", processorStatus: "confirmed" });
    expect(await token.balanceOf(dest)).toBe(parseUnits("12.5", token.decimals));
    const sent = await transactionsOfPayout(server.ctx.store, w.requestId);
    expect(sent).toHaveLength(1);
    const onChain = await chain.client.getTransaction({ hash: sent[0]?.hash as Hex });
    expect(onChain.from.toLowerCase()).toBe(hot.toLowerCase());
    // The URL's credentials went as basic authentication, never in the URL fetched.
    expect(proxy.lastAuthorization).toBe(`Basic ${Buffer.from(`ops:${PASSWORD}`).toString("base64")}`);
    await expectLedgerBalanced(server);
  });

  it("answering as { raw, tx } is taken too", async () => {
    proxy.mode = "wrapped";
    try {
      const m = await merchantPayingTo(newAddress());
      const w = await withdraw(server, m, { currency: "USDT", amount: "10" });
      expect((await drainUntilCompleted(w.requestId))?.state).toBe("completed");
    } finally {
      proxy.mode = "honest";
    }
  });

  const faults: [SignerMode | "down", SignerErrorCode][] = [
    ["other_address", "signer_wrong_address"],
    ["tampered", "signer_tampered"],
    ["garbage", "signer_bad_answer"],
    ["huge", "signer_bad_answer"],
    ["hang", "signer_timeout"],
    ["gateway_down", "signer_unreachable"],
    ["down", "signer_unreachable"],
  ];
  it.each(faults)(
    "signing %s: nothing stored or broadcast, %s reported, the payout queued and paid once the signer signs",
    async (mode, code) => {
      const dest = newAddress();
      const m = await merchantPayingTo(dest);
      const w = await withdraw(server, m, { currency: "USDT", amount: "10" });
      expect(w.answer.status, w.answer.text).toBe(200);
      const [hotNonce, otherNonce, storedNonce] = [
        await pendingNonce(hot),
        await pendingNonce(other),
        await nextHotNonce(server.ctx.store, "ethereum"),
      ];
      const { log, warnings } = capturingLog();
      const asked = proxy.requests;
      if (mode !== "down") proxy.mode = mode;
      try {
        await batch(log, mode === "down" ? await deadSignerUrl() : null);
      } finally {
        proxy.mode = "honest";
      }
      if (mode !== "down") expect(proxy.requests).toBe(asked + 1);
      expect(await findPayout(server.ctx.store, w.requestId)).toMatchObject({ state: "queued" });
      expect(await transactionsOfPayout(server.ctx.store, w.requestId)).toEqual([]);
      expect(await nextHotNonce(server.ctx.store, "ethereum")).toBe(storedNonce);
      expect([await pendingNonce(hot), await pendingNonce(other)]).toEqual([hotNonce, otherNonce]);
      const warning = warnings.find((x) => x.message === "payouts: the signer did not sign; signing later");
      expect(warning?.fields.code).toBe(code);
      expect(String(warning?.fields.reason)).not.toContain(PASSWORD);
      expect(await token.balanceOf(dest)).toBe(0n);
      // The signer signs again: the same payout goes out, once.
      expect((await drainUntilCompleted(w.requestId))?.state).toBe("completed");
      expect(await transactionsOfPayout(server.ctx.store, w.requestId)).toHaveLength(1);
      expect(await token.balanceOf(dest)).toBe(parseUnits("10", token.decimals));
      await expectLedgerBalanced(server);
    },
  );

  it("waiting for a hanging signer holds no database lock: the network's row is written meanwhile", async () => {
    const m = await merchantPayingTo(newAddress());
    const w = await withdraw(server, m, { currency: "USDT", amount: "10" });
    expect(w.answer.status, w.answer.text).toBe(200);
    const { log, warnings } = capturingLog();
    const asked = proxy.requests;
    proxy.mode = "hang";
    let elapsed: number;
    try {
      const running = batch(log, proxy.url, 3000);
      for (let i = 0; i < 100 && proxy.requests === asked; i++) await new Promise((r) => setTimeout(r, 20));
      expect(proxy.requests).toBeGreaterThan(asked);
      // The row the hot wallet's nonce is counted in (PostgreSQL locks it; SQLite has one writer).
      const started = Date.now();
      await server.ctx.store.transaction((tx) =>
        tx.db.updateTable("networks").set({ confirmations: CONFIRMATIONS }).where("name", "=", "ethereum").execute(),
      );
      elapsed = Date.now() - started;
      await running;
    } finally {
      proxy.mode = "honest";
    }
    expect(elapsed).toBeLessThan(1500);
    expect(warnings.find((x) => x.fields.code === "signer_timeout")).toBeDefined();
    expect((await drainUntilCompleted(w.requestId))?.state).toBe("completed");
  });

  it("signs again under the lock when another process took the nonce it signed at first", async () => {
    const dest = newAddress();
    const m = await merchantPayingTo(dest);
    const w = await withdraw(server, m, { currency: "USDT", amount: "10" });
    expect(w.answer.status, w.answer.text).toBe(200);
    const taken = await pendingNonce(hot);
    // While the first signature is made, "another process" sends nonce `taken` and counts it.
    proxy.beforeNextSign = async () => {
      const sent = await fetch(chain.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "eth_sendTransaction",
          params: [{ from: hot, to: hot }],
        }),
      });
      expect(((await sent.json()) as { error?: unknown }).error).toBeUndefined();
      await server.ctx.store.transaction((tx) =>
        tx.db
          .updateTable("networks")
          .set({ hot_nonce: taken + 1, hot_nonce_address: hot.toLowerCase() })
          .where("name", "=", "ethereum")
          .execute(),
      );
    };
    const asked = proxy.requests;
    await batch(capturingLog().log);
    expect(proxy.requests).toBe(asked + 2);
    const [t] = await transactionsOfPayout(server.ctx.store, w.requestId);
    expect(t?.nonce).toBe(taken + 1);
    expect((await drainUntilCompleted(w.requestId))?.state).toBe("completed");
    expect(await transactionsOfPayout(server.ctx.store, w.requestId)).toHaveLength(1);
    expect(await token.balanceOf(dest)).toBe(parseUnits("10", token.decimals));
  });

  it("a nonce fill the signer does not sign is neither stored nor sent, and is filled once it signs", async () => {
    const hole = await pendingNonce(hot);
    // A nonce taken and lost: the payout goes out at the next one, and the chain waits at the hole.
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("networks")
        .set({ hot_nonce: hole + 1, hot_nonce_address: hot.toLowerCase() })
        .where("name", "=", "ethereum")
        .execute(),
    );
    const m = await merchantPayingTo(newAddress());
    const w = await withdraw(server, m, { currency: "USDT", amount: "10" });
    expect(w.answer.status, w.answer.text).toBe(200);
    await batch(capturingLog().log);
    expect((await transactionsOfPayout(server.ctx.store, w.requestId))[0]?.nonce).toBe(hole + 1);
    const [chainOf] = await payoutChainsOf(server.ctx);
    if (!chainOf) throw new Error("no payout chain");
    const t0 = Date.now();
    const fillAt = (ms: number) =>
      fillNonceGaps(server.ctx.store, chainOf, {
        now: () => new Date(t0 + ms),
        ...CHAIN_PAYOUT_DEFAULTS,
        publicBaseUrl: server.config.publicBaseUrl,
        log: capturingLog().log,
      });
    expect(await fillAt(0)).toBe(0); // the gap is seen; filled only past the replacement delay
    proxy.mode = "hang";
    try {
      await expect(fillAt(chainOf.replaceAfterMs + 1000)).rejects.toMatchObject({ code: "signer_timeout" });
    } finally {
      proxy.mode = "honest";
    }
    expect(await fillsOf(server)).toEqual([]);
    expect(await chain.client.getTransactionCount({ address: hot, blockTag: "latest" })).toBe(hole);
    expect(await fillAt(chainOf.replaceAfterMs + 2000)).toBe(1);
    const fills = await fillsOf(server);
    expect(fills.map((f) => f.nonce)).toEqual([hole]);
    expect((await drainUntilCompleted(w.requestId))?.state).toBe("completed");
    await expectLedgerBalanced(server);
  });

  it("gives live crypto invoices forwarder addresses of the remote hot wallet's factory: no deposit key needed", async () => {
    const m = await liveMerchant(server);
    const answer = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "10",
    });
    expect(answer.status, answer.text).toBe(200);
    expect(await depositOf(server, answer.body.id)).toBe(invoiceDepositAddress(hot, answer.body.id));
    expect(server.ctx.wallet?.deposits).toBeNull();
  });
});

describe("the start-up check", () => {
  async function startWith(env: Record<string, string>): Promise<string> {
    const database = await createTestDatabase();
    try {
      const started = await startTestServer({ database, env: { SERVICE_MODE: "live", ...env } });
      await started.close();
      return "started";
    } catch (error) {
      return (error as Error).message;
    } finally {
      await database.drop();
    }
  }

  it("refuses to start when the signer signs for another address or holds no key for it; a signer down does not stop it", async () => {
    proxy.mode = "other_address";
    let wrong: string;
    try {
      wrong = await startWith(signerEnv(proxy.url));
    } finally {
      proxy.mode = "honest";
    }
    expect(wrong).toMatch(/start-up check failed for SIGNER_ADDRESS .* signed with .* not with SIGNER_ADDRESS/);
    expect(wrong).toMatch(/signer_wrong_address/);
    expect(await startWith(signerEnv(proxy.url, "0x000000000000000000000000000000000000dEaD"))).toMatch(
      /start-up check failed.*signer_refused/,
    );
    expect(wrong).not.toContain(PASSWORD);
    // Down (no network configured yet: the probe of SIGNER_URL on chain 1): the service serves.
    expect(await startWith(signerEnv(await deadSignerUrl()))).toBe("started");
    expect(await startWith(signerEnv(proxy.url))).toBe("started");
  });

  it("starts a new store (no network yet) with a signer bound to another chain than 1, as signer.md's local anvil is", async () => {
    const bound = await startAnvil({ chainId: 31337, accounts: 5, balanceEth: 1 });
    try {
      expect(await startWith(signerEnv(bound.url))).toBe("started");
    } finally {
      await bound.close();
    }
  });
});

describe("a signer per network", () => {
  /** payments_signer_up{network="ethereum"} as /metrics shows it (NaN when absent). */
  async function signerUp(on: TestServer): Promise<number> {
    const metrics = await call(on.baseUrl, "GET", "/metrics", {
      headers: { authorization: `Bearer ${on.adminToken}` },
    });
    const series = 'payments_signer_up{network="ethereum"} ';
    const line = metrics.text.split("\n").find((l) => l.startsWith(series));
    return Number(line?.slice(series.length) ?? "NaN");
  }

  it("down at start: the service serves, ethereum's payouts wait (awaiting_signer, signer_up 0), then go once it is back", async () => {
    const database = await createTestDatabase();
    // A store with ethereum configured, so the start probes ethereum's own signer.
    await (await startLiveServer(chain, token, { database, env: signerEnv(proxy.url) })).close();
    const ethereumSigner = await startSignerProxy(chain.url, other);
    await ethereumSigner.down();
    const withOwn = {
      ...signerEnv(proxy.url),
      SIGNER_URL_ETHEREUM: signerEnv(ethereumSigner.url).SIGNER_URL as string,
    };
    const served = await startLiveServer(chain, token, { database, configure: false, env: withOwn });
    try {
      expect(await signerUp(served)).toBe(0);
      // Invoices, scanning and crediting go on without the signer.
      const m = await liveMerchant(served);
      const invoice = await merchant(served, m.apiKey, "POST", "/public/v1/invoices/create", {
        currency: "USDT",
        amount: "5",
      });
      expect(invoice.status, invoice.text).toBe(200);
      const deposit = await depositOf(served, invoice.body.id);
      await chain.waitForReceipt(await token.mint(payer(chain, 1), parseUnits("5", token.decimals)));
      await chain.waitForReceipt(await token.transfer(payer(chain, 1), deposit, parseUnits("5", token.decimals)));
      await mineAndScan(served, chain, CONFIRMATIONS);
      const paid = await merchant(served, m.apiKey, "GET", `/public/v1/invoices/${invoice.body.id}`);
      expect(paid.body.status).toBe("completed");
      // A payout on ethereum waits for its signer; the default signer is not asked for it.
      const dest = newAddress();
      const payee = await merchantPayingTo(dest, served);
      const w = await withdraw(served, payee, { currency: "USDT", amount: "10" });
      expect(w.answer.status, w.answer.text).toBe(200);
      const loop = served.workers.loops.chainPayouts;
      if (!loop) throw new Error("no chain payout loop");
      const askedDefault = proxy.requests;
      await loop.runOnce();
      expect(await findPayout(served.ctx.store, w.requestId)).toMatchObject({
        state: "queued",
        processorStatus: "awaiting_signer",
      });
      expect(await transactionsOfPayout(served.ctx.store, w.requestId)).toEqual([]);
      expect(proxy.requests).toBe(askedDefault);
      expect(await signerUp(served)).toBe(0);
      // Back at the same URL: the next batches probe it and pay, without a restart.
      await ethereumSigner.up();
      for (let round = 0; round < 10; round++) {
        if ((await findPayout(served.ctx.store, w.requestId))?.state === "completed") break;
        await loop.runOnce();
        await chain.mine(CONFIRMATIONS);
      }
      expect(await findPayout(served.ctx.store, w.requestId)).toMatchObject({ state: "completed" });
      expect(await token.balanceOf(dest)).toBe(parseUnits("10", token.decimals));
      expect(ethereumSigner.requests).toBeGreaterThan(0);
      expect(proxy.requests).toBe(askedDefault);
      expect(await signerUp(served)).toBe(1);
      await expectLedgerBalanced(served);
      // Down again with nothing to pay: the worker's probe alone shows it back.
      await ethereumSigner.down();
      const hotOnEthereum = served.ctx.wallet?.hot("ethereum");
      if (!hotOnEthereum) throw new Error("no hot wallet");
      await expect(probeSigner(hotOnEthereum, chain.chainId)).rejects.toMatchObject({ code: "signer_unreachable" });
      expect(await signerUp(served)).toBe(0);
      await ethereumSigner.up();
      await loop.runOnce();
      expect(await signerUp(served)).toBe(1);
    } finally {
      await served.close();
      await ethereumSigner.close();
      await database.drop();
    }
  });

  it("a network's own signer that signs for another address stops the start, naming its variable", async () => {
    const database = await createTestDatabase();
    await (await startLiveServer(chain, token, { database, env: signerEnv(proxy.url) })).close();
    const ethereumSigner = await startSignerProxy(chain.url, other);
    ethereumSigner.mode = "other_address";
    try {
      const env = { ...signerEnv(proxy.url), SIGNER_URL_ETHEREUM: signerEnv(ethereumSigner.url).SIGNER_URL as string };
      const refused = await startLiveServer(chain, token, { database, configure: false, env }).then(
        async (s) => {
          await s.close();
          return "started";
        },
        (error: Error) => error.message,
      );
      expect(refused).toMatch(
        /^SIGNER_URL_ETHEREUM: the start-up check failed for SIGNER_ADDRESS .* on network ethereum \(chain 1\): the signer signed with .*\(signer_wrong_address\)/,
      );
      expect(refused).not.toContain(PASSWORD);
    } finally {
      await ethereumSigner.close();
      await database.drop();
    }
  });
});

describe("derived deposit addresses under a remote signer", () => {
  it("a sweep waits with a clear last_error, and completes once the mnemonic is back", async () => {
    const database = await createTestDatabase();
    const withMnemonic = await startLiveServer(chain, token, { database });
    let invoiceId: string;
    let address: Hex;
    try {
      const m = await liveMerchant(withMnemonic);
      const created = await merchant(withMnemonic, m.apiKey, "POST", "/public/v1/invoices/create", {
        currency: "ETH",
        amount: "0.1",
      });
      expect(created.status, created.text).toBe(200);
      invoiceId = created.body.id;
      // Made before forwarders: a derived address, swept with its deposit key.
      address = await asLegacyDerivedInvoice(withMnemonic, invoiceId);
    } finally {
      await withMnemonic.close();
    }
    const sweepOf = async (s: TestServer) =>
      s.ctx.store.db.selectFrom("sweeps").selectAll().where("invoice_id", "=", invoiceId).executeTakeFirst();
    const remote = await startLiveServer(chain, token, { database, configure: false, env: signerEnv(proxy.url) });
    try {
      await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), address, parseEther("0.1")));
      await mineAndScan(remote, chain, CONFIRMATIONS);
      await scan(remote);
      const waiting = await sweepOf(remote);
      expect(waiting).toMatchObject({ state: "pending", last_error: NO_DEPOSIT_KEYS });
      expect(await chain.balance(address)).toBe(parseEther("0.1"));
    } finally {
      await remote.close();
    }
    // Drained with the mnemonic, as docs/signer.md tells the operator.
    const drained = await startLiveServer(chain, token, { database, configure: false });
    try {
      await drained.ctx.store.transaction((tx) =>
        tx.db.updateTable("sweeps").set({ next_attempt_at: "2000-01-01T00:00:00.000Z" }).execute(),
      );
      await mineAndScan(drained, chain, 1);
      // Mined, the sweep completes once the network's confirmations deep.
      await mineAndScan(drained, chain, CONFIRMATIONS);
      expect((await sweepOf(drained))?.state).toBe("completed");
      expect(await chain.balance(address)).toBe(0n);
    } finally {
      await drained.close();
      await database.drop();
    }
  });
});
