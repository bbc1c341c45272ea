// Live payouts survive SIGKILL: the service, run as a child process in live mode on a local chain, kills itself between signing and broadcast, and between broadcast and recording; after a restart the chain holds one transaction per payout, never two.
import { randomBytes, randomUUID } from "node:crypto";
import type { Hex } from "viem";
import { parseEther } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLedger } from "../../src/store/ledger.ts";
import { openStore } from "../../src/store/store.ts";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain } from "../support/chain.ts";
import { type ServiceProcess, spawnService, until as waitUntil } from "../support/process.ts";
import { call, createTestDatabase, freePort, storeKind, type TestDatabase } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";

const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
const ADMIN_TOKEN = `test-admin-${randomBytes(12).toString("hex")}`;
let chain: LocalChain;
let database: TestDatabase;

beforeAll(async () => {
  [chain, database] = await Promise.all([startLocalChain(), createTestDatabase()]);
  await chain.sendEth(chain.accounts[1] as Hex, hot.address, parseEther("5"));
}, 240_000);
afterAll(async () => {
  await chain?.close();
  await database?.drop();
});

async function service(crashAt: string | null, env: Record<string, string> = {}): Promise<ServiceProcess> {
  return spawnService(
    {
      DATABASE_URL: database.url,
      SECRET_ENCRYPTION_KEY: "b".repeat(64),
      ADMIN_TOKEN,
      SERVICE_MODE: "live",
      WALLET_MNEMONIC: SERVICE_MNEMONIC,
      CHAIN_PAYOUT_POLL_MS: "100",
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "0",
      ...(crashAt ? { PAYOUT_TEST_CRASH_AT: crashAt } : {}),
      ...env,
    },
    await freePort(),
  );
}

const adminCall = (baseUrl: string, method: string, path: string, body?: unknown) =>
  call(baseUrl, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });

/** With every service process stopped: every balance change balanced, none negative. */
async function expectLedgerBalanced(): Promise<void> {
  const store = await openStore(database.url);
  try {
    const audit = await auditLedger(store);
    for (const [currency, sum] of audit.sumsByCurrency) expect(sum, `ledger sum in ${currency}`).toBe(0n);
    expect(audit.mismatchedBalances).toEqual([]);
    expect(audit.negativeMerchantBalances).toEqual([]);
  } finally {
    await store.close();
  }
}

/** The shared wait (test/support/process.ts), looking every 100 ms. */
const until = <T>(what: string, probe: () => Promise<T | null>, timeoutMs = 30_000) =>
  waitUntil(what, probe, { timeoutMs, everyMs: 100 });

/** A merchant with ETH and a withdrawal method, and the network configured: through the operator API. */
async function prepare(baseUrl: string) {
  expect(
    (
      await adminCall(baseUrl, "PUT", "/networks/local", {
        chainId: chain.chainId,
        rpcUrl: chain.url,
        confirmations: 2,
      })
    ).status,
  ).toBe(200);
  const put = await adminCall(baseUrl, "PUT", "/currencies/ETH", {
    fullName: "Ether",
    network: "local",
    contractAddress: null,
    type: "token",
    icon: "/icons/eth.svg",
    iconDark: "/icons/eth-dark.svg",
    internalTicker: "ETH",
    decimals: 18,
    networkFee: "0.0005",
    withdrawalMin: "0.01",
    withdrawalMax: "100",
    rateUsd: "3000",
  });
  expect(put.status, put.text).toBe(200);
  const created = await adminCall(baseUrl, "POST", "/merchants", { email: `m-${randomUUID()}@example.com` });
  const key = await adminCall(baseUrl, "POST", `/merchants/${created.body.id}/api-keys`, {});
  await adminCall(baseUrl, "POST", `/merchants/${created.body.id}/balance-adjustments`, {
    currency: "ETH",
    amount: "1",
    memo: "test",
  });
  return { id: created.body.id as string, apiKey: key.body.apiKey as string, secretKey: key.body.secretKey as string };
}

async function withdrawal(baseUrl: string, m: { id: string; apiKey: string; secretKey: string }, dest: Hex) {
  const method = await adminCall(baseUrl, "POST", `/merchants/${m.id}/withdrawal-methods`, {
    currency: "ETH",
    address: dest,
  });
  expect(method.status, method.text).toBe(200);
  const w = await signedCall(baseUrl, {
    apiKey: m.apiKey,
    secret: m.secretKey,
    body: { currency: "ETH", amount: "0.02", withdrawalMethodId: method.body.id },
  });
  expect(w.answer.status, w.answer.text).toBe(200);
  return w.requestId.toLowerCase();
}

async function payoutOf(baseUrl: string, requestId: string) {
  const list = await adminCall(baseUrl, "GET", "/payouts?limit=500");
  return (list.body as { requestId: string; state: string; processorTxId: string | null }[]).find(
    (p) => p.requestId === requestId,
  );
}

describe("live payouts killed mid-flight (child process, SIGKILL)", () => {
  let merchant: { id: string; apiKey: string; secretKey: string };
  let first: ServiceProcess | null = null;

  it("at each crash point the stored transaction goes out once after a restart", async () => {
    for (const point of ["after_sign", "after_broadcast"]) {
      const dest = `0x${randomBytes(20).toString("hex")}` as Hex;
      const nonceBefore = await chain.client.getTransactionCount({ address: hot.address });
      const crashing = await service(point);
      first = crashing;
      merchant ??= await prepare(crashing.baseUrl);
      const requestId = await withdrawal(crashing.baseUrl, merchant, dest);
      const code = await Promise.race([
        crashing.exited,
        new Promise((resolve) => setTimeout(() => resolve("alive"), 20_000)),
      ]);
      expect(code, crashing.output()).not.toBe("alive");
      expect(crashing.child.signalCode).toBe("SIGKILL");
      const onChainAfterCrash = await chain.client.getTransactionCount({ address: hot.address });
      expect(onChainAfterCrash).toBe(point === "after_sign" ? nonceBefore : nonceBefore + 1);

      const restarted = await service(null);
      try {
        const settled = await until("the payout to complete", async () => {
          await chain.mine(1);
          const p = await payoutOf(restarted.baseUrl, requestId);
          return p?.state === "completed" ? p : null;
        });
        expect(await chain.client.getTransactionCount({ address: hot.address })).toBe(nonceBefore + 1);
        expect(await chain.balance(dest)).toBe(parseEther("0.02"));
        const detail = await adminCall(restarted.baseUrl, "GET", `/payouts/${requestId}`);
        expect(detail.status).toBe(200);
        expect(detail.body.transactions).toHaveLength(1);
        expect(detail.body.transactions[0].hash).toBe(settled.processorTxId);
      } finally {
        await restarted.stop();
      }
      await expectLedgerBalanced();
    }
  }, 400_000);

  afterAll(async () => {
    await first?.stop();
  });
});

if (storeKind() === "postgres") {
  describe("PostgreSQL: two service processes on one database", () => {
    it("send 200 payouts: each once, nonces contiguous", async () => {
      const [a, b] = await Promise.all([service(null), service(null)]);
      try {
        const m = await prepare(a.baseUrl);
        await adminCall(a.baseUrl, "POST", `/merchants/${m.id}/balance-adjustments`, {
          currency: "ETH",
          amount: "3",
          memo: "test",
        });
        const dest = `0x${randomBytes(20).toString("hex")}` as Hex;
        const method = await adminCall(a.baseUrl, "POST", `/merchants/${m.id}/withdrawal-methods`, {
          currency: "ETH",
          address: dest,
        });
        const nonceBefore = await chain.client.getTransactionCount({ address: hot.address });
        const keys: string[] = [];
        for (let i = 0; i < 200; i += 20) {
          const sent = await Promise.all(
            Array.from({ length: 20 }, (_, j) =>
              signedCall((i + j) % 2 === 0 ? a.baseUrl : b.baseUrl, {
                apiKey: m.apiKey,
                secret: m.secretKey,
                body: { currency: "ETH", amount: "0.01", withdrawalMethodId: method.body.id },
              }),
            ),
          );
          for (const w of sent) {
            expect(w.answer.status, w.answer.text).toBe(200);
            keys.push(w.requestId.toLowerCase());
          }
        }
        await until(
          "200 payouts to complete",
          async () => {
            await chain.mine(1);
            const list = await adminCall(b.baseUrl, "GET", "/payouts?limit=500");
            const done = (list.body as { requestId: string; state: string }[]).filter(
              (p) => keys.includes(p.requestId) && p.state === "completed",
            );
            return done.length === 200 ? done : null;
          },
          400_000,
        ).catch(async (error) => {
          const list = await adminCall(b.baseUrl, "GET", "/payouts?limit=500");
          const states = new Map<string, number>();
          for (const p of list.body as { requestId: string; state: string; processorStatus: string | null }[]) {
            if (!keys.includes(p.requestId)) continue;
            const k = `${p.state}/${p.processorStatus}`;
            states.set(k, (states.get(k) ?? 0) + 1);
          }
          throw new Error(`${error}: ${JSON.stringify([...states])}\n${a.output().slice(-3000)}`);
        });
        expect(await chain.client.getTransactionCount({ address: hot.address })).toBe(nonceBefore + 200);
        expect(await chain.balance(dest)).toBe(parseEther("2"));
        const nonces: number[] = [];
        for (const key of keys) {
          const detail = await adminCall(a.baseUrl, "GET", `/payouts/${key}`);
          expect(detail.body.transactions).toHaveLength(1);
          nonces.push(detail.body.transactions[0].nonce);
        }
        expect(nonces.sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => nonceBefore + i));
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
      await expectLedgerBalanced();
    }, 240_000);
  });
}
