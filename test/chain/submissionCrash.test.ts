// SIGKILL during a payer's signed payment (issue 45, product §28 with §19's crash rules), real service processes on a local chain: killed after the submission is signed and stored and before its broadcast, and after its broadcast; after a restart each invoice is paid once, by one submission at its own nonce, nothing doubled, the ledger audits clean.
import { randomBytes, randomUUID } from "node:crypto";
import { type Hex, parseEther } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PAYOUT_CRASH_POINTS } from "../../src/chain/crashPoints.ts";
import { auditLedger } from "../../src/store/ledger.ts";
import { openStore, type Store } from "../../src/store/store.ts";
import { type AuthorizationToken, type LocalChain, SERVICE_MNEMONIC, startLocalChain } from "../support/chain.ts";
import { putFactoryOnChain, usdtEntry } from "../support/live.ts";
import { type ServiceProcess, spawnService, until as waitUntil } from "../support/process.ts";
import { call, createTestDatabase, freePort, type TestDatabase } from "../support/server.ts";
import { payerAccount, randomAuthorizationNonce } from "../support/walletPayments.ts";

const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
const ADMIN_TOKEN = `test-admin-${randomBytes(12).toString("hex")}`;
const CONFIRMATIONS = 2;
const PAYER_INDEX = 2;
/** 10 USDC in the token's units: each invoice's amount, what its payer signs. */
const AMOUNT = 10_000_000n;
/** Bound of each wait: a process that neither dies nor settles within it fails the test. */
const WAIT_MS = 90_000;
let chain: LocalChain;
let usdc: AuthorizationToken;

beforeAll(async () => {
  chain = await startLocalChain();
  usdc = await chain.deployAuthorizationToken();
  await chain.waitForReceipt(await chain.sendEth(chain.accounts[1] as Hex, hot.address, parseEther("5")));
  await chain.waitForReceipt(await usdc.mint(payerAccount(chain, PAYER_INDEX).address, 1_000_000_000n));
  // The factory is on chain before any service runs (paid by a node account): recording it sends nothing from the hot wallet.
  await putFactoryOnChain(chain, hot.address);
}, 120_000);

afterAll(async () => {
  await chain?.close();
});

async function service(database: TestDatabase, env: Record<string, string> = {}): Promise<ServiceProcess> {
  return spawnService(
    {
      DATABASE_URL: database.url,
      SECRET_ENCRYPTION_KEY: "d".repeat(64),
      ADMIN_TOKEN,
      SERVICE_MODE: "live",
      WALLET_MNEMONIC: SERVICE_MNEMONIC,
      CHAIN_PAYOUT_POLL_MS: "100",
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "0",
      ADMIN_RATE_LIMIT_PER_MINUTE: "0",
      PAYER_RATE_LIMIT_PER_MINUTE: "0",
      WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
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

/** The network, USDC on the EIP-3009 test token and a merchant without fees: through the operator API. */
async function prepare(baseUrl: string) {
  const network = await adminCall(baseUrl, "PUT", "/networks/ethereum", {
    chainId: chain.chainId,
    rpcUrl: chain.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status, network.text).toBe(200);
  const factory = await adminCall(baseUrl, "POST", "/networks/ethereum/factory");
  expect(factory.status, factory.text).toBe(200);
  const entry = usdtEntry(usdc, {
    fullName: "USD Coin",
    icon: "/icons/usdc.svg",
    iconDark: "/icons/usdc-dark.svg",
    internalTicker: "USDC_ERC20",
    authorization: { kind: "eip3009", ...usdc.eip712 },
  });
  const currency = await adminCall(baseUrl, "PUT", "/currencies/USDC", entry);
  expect(currency.status, currency.text).toBe(200);
  const created = await adminCall(baseUrl, "POST", "/merchants", {
    email: `m-${randomUUID()}@example.com`,
    feePercent: "0",
  });
  expect(created.status, created.text).toBe(200);
  const key = await adminCall(baseUrl, "POST", `/merchants/${created.body.id}/api-keys`, {});
  return { id: created.body.id as string, apiKey: key.body.apiKey as string };
}

/** The payer signs what GET /pay/{id}/status offers on ethereum, as a wallet's eth_signTypedData_v4 would, and posts it. */
async function payBySignature(baseUrl: string, invoiceId: string): Promise<string> {
  const status = await call(baseUrl, "GET", `/pay/${invoiceId}/status`);
  expect(status.status, status.text).toBe(200);
  const terms = status.body.networks.find((n: { name: string }) => n.name === "ethereum").authorization;
  expect(terms.kind).toBe("eip3009");
  const account = payerAccount(chain, PAYER_INDEX);
  const message = { ...terms.typedData.message, from: account.address, nonce: randomAuthorizationNonce() };
  const { EIP712Domain: _domain, ...types } = terms.typedData.types;
  const signature = await account.signTypedData({ ...terms.typedData, types, message });
  const posted = await call(baseUrl, "POST", `/pay/${invoiceId}/authorization`, {
    body: {
      network: "ethereum",
      from: account.address,
      signature,
      nonce: message.nonce,
      validAfter: message.validAfter,
      validBefore: message.validBefore,
      value: message.value,
    },
  });
  expect(posted.status, posted.text).toBe(202);
  return posted.body.id as string;
}

async function invoiceStatus(store: Store, invoiceId: string): Promise<string> {
  const row = await store.db
    .selectFrom("invoices")
    .select("status")
    .where("id", "=", invoiceId)
    .executeTakeFirstOrThrow();
  return row.status;
}

/** One crash point: a USDC invoice paid by signature, the service killed at `point` in its submission, then restarted until the invoice completes. */
async function crashOnce(
  database: TestDatabase,
  store: Store,
  point: string,
  merchant: { id: string; apiKey: string } | null,
) {
  const crashing = await service(database, { PAYOUT_TEST_CRASH_AT: point });
  let running: ServiceProcess = crashing;
  try {
    const m = merchant ?? (await prepare(crashing.baseUrl));
    const created = await call(crashing.baseUrl, "POST", "/public/v1/invoices/create", {
      headers: { "x-api-key": m.apiKey },
      body: { currency: "USDC", amount: "10" },
    });
    expect(created.status, created.text).toBe(200);
    const invoiceId = created.body.id as string;
    const nonceBefore = await chain.client.getTransactionCount({ address: hot.address, blockTag: "pending" });
    const hotTokensBefore = await usdc.balanceOf(hot.address);
    const authorizationId = await payBySignature(crashing.baseUrl, invoiceId);
    await until(`the service to kill itself at ${point}`, async () =>
      crashing.child.signalCode !== null || crashing.child.exitCode !== null ? true : null,
    );
    expect(crashing.child.signalCode, crashing.output()).toBe("SIGKILL");
    // What reached the chain before the kill: the stored submission only after its broadcast (mined at once: automine).
    const atKill = await chain.client.getTransactionCount({ address: hot.address, blockTag: "pending" });
    expect(atKill).toBe(point === "after_sign" ? nonceBefore : nonceBefore + 1);
    const moved = (await usdc.balanceOf(hot.address)) - hotTokensBefore;
    expect(moved).toBe(point === "after_sign" ? 0n : AMOUNT);
    // At either point the submission was stored signed and its broadcast not recorded: the restart has its bytes to follow.
    const stored = await store.db
      .selectFrom("hot_transactions")
      .select("state")
      .where("purpose_id", "=", authorizationId)
      .execute();
    expect(stored).toEqual([{ state: "signed" }]);
    running = await service(database);
    await until(
      "the invoice completed",
      async () => ((await invoiceStatus(store, invoiceId)) === "completed" ? true : null),
      () => chain.mine(1),
    );
    await running.stop();
    // One submission for the invoice: the hot wallet's nonce moved by one, the tokens arrived once.
    expect(await chain.client.getTransactionCount({ address: hot.address })).toBe(nonceBefore + 1);
    expect((await usdc.balanceOf(hot.address)) - hotTokensBefore).toBe(AMOUNT);
    return m;
  } finally {
    if (running.child.exitCode === null && running.child.signalCode === null) await running.stop();
  }
}

/** With every service process stopped: each signed payment settled by one confirmed submission at its own nonce, contiguous with the chain's. */
async function expectOneSubmissionEach(store: Store, hotNonceBefore: number) {
  const authorizations = await store.db
    .selectFrom("wallet_authorizations")
    .select(["id", "state"])
    .orderBy("created_at")
    .execute();
  expect(authorizations.map((a) => a.state)).toEqual(PAYOUT_CRASH_POINTS.map(() => "settled"));
  const txs = await store.db
    .selectFrom("hot_transactions")
    .select(["purpose_id", "state", "nonce"])
    .where("purpose", "=", "submission")
    .orderBy("nonce")
    .execute();
  expect(txs.map((t) => [t.purpose_id, t.state])).toEqual(authorizations.map((a) => [a.id, "confirmed"]));
  expect(new Set(txs.map((t) => Number(t.nonce))).size).toBe(PAYOUT_CRASH_POINTS.length);
  // Nothing else went out from the hot wallet, and every nonce the service took is mined.
  expect(
    await store.db.selectFrom("hot_transactions").select("purpose").where("purpose", "!=", "submission").execute(),
  ).toEqual([]);
  const network = await store.db.selectFrom("networks").select("hot_nonce").executeTakeFirstOrThrow();
  expect(Number(network.hot_nonce)).toBe(await chain.client.getTransactionCount({ address: hot.address }));
  expect(Number(network.hot_nonce)).toBe(hotNonceBefore + PAYOUT_CRASH_POINTS.length);
}

describe("signed payments killed mid-submission (child process, SIGKILL)", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("at each crash point the invoice is paid once, by one submission, after a restart", async () => {
    const hotTokensBefore = await usdc.balanceOf(hot.address);
    const hotNonceBefore = await chain.client.getTransactionCount({ address: hot.address });
    let store: Store | null = null;
    let merchant: { id: string; apiKey: string } | null = null;
    try {
      // The first service process migrates the database; the test reads it once it answers.
      const first = await service(database);
      await first.stop();
      store = await openStore(database.url);
      for (const point of PAYOUT_CRASH_POINTS) merchant = await crashOnce(database, store, point, merchant);
      expect((await usdc.balanceOf(hot.address)) - hotTokensBefore).toBe(AMOUNT * BigInt(PAYOUT_CRASH_POINTS.length));
      await expectOneSubmissionEach(store, hotNonceBefore);
      const payments = await store.db.selectFrom("invoice_payments").select("invoice_id").execute();
      expect(new Set(payments.map((p) => p.invoice_id)).size).toBe(PAYOUT_CRASH_POINTS.length);
      expect(payments).toHaveLength(PAYOUT_CRASH_POINTS.length);
      const audit = await auditLedger(store);
      for (const [currency, sum] of audit.sumsByCurrency) expect(sum, `ledger sum in ${currency}`).toBe(0n);
      expect(audit.mismatchedBalances).toEqual([]);
      expect(audit.negativeMerchantBalances).toEqual([]);
      // Each 10 USDC invoice less the entry's network fee of 1 USDC, no merchant fee.
      const merchantUsdc = await store.db
        .selectFrom("ledger_balances")
        .select("balance")
        .where("account", "=", `merchant:${merchant?.id ?? ""}`)
        .where("currency", "=", "USDC")
        .executeTakeFirst();
      expect(merchantUsdc?.balance).toBe(String(9_000_000 * PAYOUT_CRASH_POINTS.length));
    } finally {
      await store?.close();
    }
  }, 900_000);
});
