// SIGKILL during a flush (product §24 with §19's crash rules), real service processes on a local chain: killed after the flush is stored and before its broadcast, and after its broadcast; after a restart every deposit reached the hot wallet once, one nonce per flush, nothing doubled, the ledger audits clean.
import { randomBytes, randomUUID } from "node:crypto";
import { type Hex, parseEther } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FLUSH_CRASH_POINTS } from "../../src/chain/flusher.ts";
import { deployFactory } from "../../src/chain/forwarders.ts";
import { DEPLOYMENT_PROXY, DEPLOYMENT_PROXY_CODE } from "../../src/domain/forwarders.ts";
import { auditLedger } from "../../src/store/ledger.ts";
import { openStore, type Store } from "../../src/store/store.ts";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "../support/chain.ts";
import { forwarderDepositOf } from "../support/forwarderInvoices.ts";
import { type ServiceProcess, spawnService, until as waitUntil } from "../support/process.ts";
import { call, createTestDatabase, freePort, type TestDatabase } from "../support/server.ts";

const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
const ADMIN_TOKEN = `test-admin-${randomBytes(12).toString("hex")}`;
const CONFIRMATIONS = 2;
/** Deposits per flush: the batch size, so each crash point's two deposits go in one flush. */
const BATCH = 2;
/** Bound of each wait: a process that neither dies nor settles within it fails the test. */
const WAIT_MS = 90_000;
let chain: LocalChain;
let token: TestToken;

beforeAll(async () => {
  chain = await startLocalChain({ chainId: 8453 });
  token = await chain.deployToken();
  const code = await chain.client.getCode({ address: DEPLOYMENT_PROXY });
  if (code === undefined || code === "0x") {
    await chain.client.request({
      method: "anvil_setCode" as "eth_chainId",
      params: [DEPLOYMENT_PROXY, DEPLOYMENT_PROXY_CODE] as unknown as undefined,
    });
  }
  await chain.waitForReceipt(await chain.sendEth(chain.accounts[1] as Hex, hot.address, parseEther("5")));
  await chain.waitForReceipt(await token.mint(chain.accounts[1] as Hex, 1_000_000_000n));
  const deployed = await deployFactory({ client: chain.client, signer: hot });
  if (!deployed.ok) throw new Error(`factory: ${deployed.error}`);
}, 120_000);

afterAll(async () => {
  await chain?.close();
});

async function service(database: TestDatabase, env: Record<string, string> = {}): Promise<ServiceProcess> {
  return spawnService(
    {
      DATABASE_URL: database.url,
      SECRET_ENCRYPTION_KEY: "c".repeat(64),
      ADMIN_TOKEN,
      SERVICE_MODE: "live",
      WALLET_MNEMONIC: SERVICE_MNEMONIC,
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "0",
      ADMIN_RATE_LIMIT_PER_MINUTE: "0",
      PAYER_RATE_LIMIT_PER_MINUTE: "0",
      WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
      FLUSH_BATCH_SIZE: String(BATCH),
      FLUSH_MAX_WAIT_MS: "3600000",
      ...env,
    },
    await freePort(),
  );
}

const adminCall = (baseUrl: string, method: string, path: string, body?: unknown) =>
  call(baseUrl, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });

/** The shared wait (test/support/process.ts), bounded by this file's WAIT_MS. */
const until = <T>(what: string, probe: () => Promise<T | null>, tick?: () => Promise<void>) =>
  waitUntil(what, probe, tick === undefined ? { timeoutMs: WAIT_MS } : { timeoutMs: WAIT_MS, tick });

/** The network, USDT on the test token and a merchant without fees: through the operator API. */
async function prepare(baseUrl: string) {
  const network = await adminCall(baseUrl, "PUT", "/networks/base", {
    chainId: chain.chainId,
    rpcUrl: chain.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status, network.text).toBe(200);
  // The factory is on chain already (beforeAll): the operator's deployment step finds and records it.
  const factory = await adminCall(baseUrl, "POST", "/networks/base/factory");
  expect(factory.status, factory.text).toBe(200);
  const usdt = await adminCall(baseUrl, "PUT", "/currencies/USDT", {
    fullName: "Tether USD",
    network: "base",
    contractAddress: token.address,
    type: "stablecoin",
    icon: "/icons/usdt.svg",
    iconDark: "/icons/usdt-dark.svg",
    internalTicker: "USDT",
    decimals: 6,
    networkFee: "1",
    withdrawalMin: "10",
    withdrawalMax: "100000",
    rateUsd: "1",
  });
  expect(usdt.status, usdt.text).toBe(200);
  const created = await adminCall(baseUrl, "POST", "/merchants", {
    email: `m-${randomUUID()}@example.com`,
    feePercent: "0",
  });
  expect(created.status, created.text).toBe(200);
  const key = await adminCall(baseUrl, "POST", `/merchants/${created.body.id}/api-keys`, {});
  return { id: created.body.id as string, apiKey: key.body.apiKey as string };
}

/** A 10 USDT invoice made through the API, on its forwarder deposit address. */
async function invoice(baseUrl: string, apiKey: string, store: Store): Promise<{ id: string; address: Hex }> {
  const created = await call(baseUrl, "POST", "/public/v1/invoices/create", {
    headers: { "x-api-key": apiKey },
    body: { currency: "USDT", amount: "10" },
  });
  expect(created.status, created.text).toBe(200);
  const id = created.body.id as string;
  return { id, address: await forwarderDepositOf(store, id, hot.address) };
}

function flushStates(store: Store, invoiceIds: string[]) {
  return store.db.selectFrom("flush_deposits").select("state").where("invoice_id", "in", invoiceIds).execute();
}

/** One crash point: two deposits paid, the service killed at `point` in their flush, then restarted until they are flushed. */
async function crashOnce(
  database: TestDatabase,
  store: Store,
  point: string,
  merchant: { id: string; apiKey: string } | null,
) {
  const crashing = await service(database, { FLUSH_TEST_CRASH_AT: point });
  let running: ServiceProcess = crashing;
  try {
    const m = merchant ?? (await prepare(crashing.baseUrl));
    const deposits = [
      await invoice(crashing.baseUrl, m.apiKey, store),
      await invoice(crashing.baseUrl, m.apiKey, store),
    ];
    const nonceBefore = await chain.client.getTransactionCount({ address: hot.address, blockTag: "pending" });
    for (const d of deposits) {
      await chain.waitForReceipt(await token.transfer(chain.accounts[1] as Hex, d.address, 10_000_000n));
    }
    await chain.mine(CONFIRMATIONS);
    await until(
      `the service to kill itself at ${point}`,
      async () => (crashing.child.signalCode !== null || crashing.child.exitCode !== null ? true : null),
      () => chain.mine(1),
    );
    expect(crashing.child.signalCode, crashing.output()).toBe("SIGKILL");
    // What reached the chain before the kill: the stored flush only after its broadcast.
    const atKill = await chain.client.getTransactionCount({ address: hot.address, blockTag: "pending" });
    expect(atKill).toBe(point === "after_sign" ? nonceBefore : nonceBefore + 1);
    for (const d of deposits) {
      expect(await token.balanceOf(d.address)).toBe(point === "after_sign" ? 10_000_000n : 0n);
    }
    running = await service(database);
    const ids = deposits.map((d) => d.id);
    await until(
      "both deposits flushed and recorded",
      async () => ((await flushStates(store, ids)).every((r) => r.state === "flushed") ? true : null),
      () => chain.mine(1),
    );
    await running.stop();
    for (const d of deposits) expect(await token.balanceOf(d.address)).toBe(0n);
    // One flush for the two deposits: the hot wallet's nonce moved by one.
    expect(await chain.client.getTransactionCount({ address: hot.address })).toBe(nonceBefore + 1);
    return m;
  } finally {
    if (running.child.exitCode === null && running.child.signalCode === null) await running.stop();
  }
}

describe("flushes killed mid-flight (child process, SIGKILL)", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("at each crash point both deposits reach the hot wallet once, in one flush, after a restart", async () => {
    const hotTokensBefore = await token.balanceOf(hot.address);
    const hotNonceBefore = await chain.client.getTransactionCount({ address: hot.address });
    // The test's own connection: it writes the forwarder addresses and reads the rows (the service's migrations first).
    let store: Store | null = null;
    let merchant: { id: string; apiKey: string } | null = null;
    try {
      for (const point of FLUSH_CRASH_POINTS) {
        if (store === null) {
          // The first service process migrates the database; the test connects once it answers.
          const first = await service(database);
          await first.stop();
          store = await openStore(database.url);
        }
        merchant = await crashOnce(database, store, point, merchant);
      }
      const s = store as Store;
      expect((await token.balanceOf(hot.address)) - hotTokensBefore).toBe(
        20_000_000n * BigInt(FLUSH_CRASH_POINTS.length),
      );
      const flushes = await s.db.selectFrom("flushes").select(["id", "state"]).orderBy("id").execute();
      expect(flushes.map((f) => f.state)).toEqual(FLUSH_CRASH_POINTS.map(() => "completed"));
      // Each flush's one transaction in the outbox, confirmed, at its own nonce: none signed twice.
      const txs = await s.db
        .selectFrom("hot_transactions")
        .select(["purpose_id", "state", "nonce"])
        .where("purpose", "=", "flush")
        .orderBy("nonce")
        .execute();
      expect(txs.map((t) => [t.purpose_id, t.state])).toEqual(flushes.map((f) => [f.id, "confirmed"]));
      expect(new Set(txs.map((t) => Number(t.nonce))).size).toBe(FLUSH_CRASH_POINTS.length);
      // Nonces contiguous on chain: every nonce the service took is mined, one per flush.
      const network = await s.db.selectFrom("networks").select("hot_nonce").executeTakeFirstOrThrow();
      expect(Number(network.hot_nonce)).toBe(await chain.client.getTransactionCount({ address: hot.address }));
      expect(Number(network.hot_nonce)).toBe(hotNonceBefore + FLUSH_CRASH_POINTS.length);
      expect(await s.db.selectFrom("sweeps").select("id").execute()).toEqual([]);
      const audit = await auditLedger(s);
      for (const [currency, sum] of audit.sumsByCurrency) expect(sum, `ledger sum in ${currency}`).toBe(0n);
      expect(audit.mismatchedBalances).toEqual([]);
      expect(audit.negativeMerchantBalances).toEqual([]);
      const merchantUsdt = await s.db
        .selectFrom("ledger_balances")
        .select("balance")
        .where("account", "=", `merchant:${merchant?.id ?? ""}`)
        .where("currency", "=", "USDT")
        .executeTakeFirst();
      expect(merchantUsdt?.balance).toBe(String(2 * 9_000_000 * FLUSH_CRASH_POINTS.length));
    } finally {
      await store?.close();
    }
  }, 900_000);
});
