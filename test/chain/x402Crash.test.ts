// An x402 settle survives SIGKILL (product §28, issue 46): the service, a child process in live mode on a local chain, kills itself after signing the payment's submission and after broadcasting it, while the settle waits; after a restart the same settle answers the one transaction, and the merchant is paid once.
import { randomBytes, randomUUID } from "node:crypto";
import { x402Client } from "@x402/core/client";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { type Hex, parseEther } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLedger } from "../../src/store/ledger.ts";
import { openStore } from "../../src/store/store.ts";
import { type AuthorizationToken, type LocalChain, SERVICE_MNEMONIC, startLocalChain } from "../support/chain.ts";
import { putFactoryOnChain, usdtEntry } from "../support/live.ts";
import { type ServiceProcess, spawnService, until as waitUntil } from "../support/process.ts";
import { type Answer, call, createTestDatabase, freePort, type TestDatabase } from "../support/server.ts";
import { payerAccount } from "../support/walletPayments.ts";

const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
const ADMIN_TOKEN = `test-admin-${randomBytes(12).toString("hex")}`;
let chain: LocalChain;
let database: TestDatabase;
let usdc: AuthorizationToken;

beforeAll(async () => {
  [chain, database] = await Promise.all([startLocalChain(), createTestDatabase()]);
  usdc = await chain.deployAuthorizationToken();
  await usdc.mint(chain.accounts[1] as Hex, 1_000_000_000n);
  await chain.waitForReceipt(await chain.sendEth(chain.accounts[3] as Hex, hot.address, parseEther("1")));
}, 240_000);
afterAll(async () => {
  await chain?.close();
  await database?.drop();
});

async function service(crashAt: string | null): Promise<ServiceProcess> {
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
    },
    await freePort(),
  );
}

const adminCall = (baseUrl: string, method: string, path: string, body?: unknown) =>
  call(baseUrl, method, `/admin/v1${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, body });

/** The shared wait (test/support/process.ts), looking every 100 ms. */
const until = <T>(what: string, probe: () => Promise<T | null>, timeoutMs = 30_000) =>
  waitUntil(what, probe, { timeoutMs, everyMs: 100 });

/** The network (its factory recorded: live invoices open), the EIP-3009 entry and a merchant without fees. */
async function prepare(baseUrl: string) {
  const network = await adminCall(baseUrl, "PUT", "/networks/ethereum", {
    chainId: chain.chainId,
    rpcUrl: chain.url,
    confirmations: 2,
  });
  expect(network.status, network.text).toBe(200);
  await putFactoryOnChain(chain, hot.address);
  expect((await adminCall(baseUrl, "POST", "/networks/ethereum/factory")).status).toBe(200);
  const entry = usdtEntry(usdc, {
    fullName: "USD Coin",
    internalTicker: "USDC_ERC20",
    authorization: { kind: "eip3009", ...usdc.eip712 },
  });
  expect((await adminCall(baseUrl, "PUT", "/currencies/USDC", entry)).status).toBe(200);
  const created = await adminCall(baseUrl, "POST", "/merchants", {
    email: `m-${randomUUID()}@example.com`,
    feePercent: "0",
  });
  const key = await adminCall(baseUrl, "POST", `/merchants/${created.body.id}/api-keys`, {});
  return { id: created.body.id as string, apiKey: key.body.apiKey as string };
}

/** A payment the @x402/fetch client would send for 2.5 USDC to the hot wallet. */
async function payload(resource: string): Promise<PaymentPayload> {
  const network = `eip155:${chain.chainId}` as const;
  const client = x402Client.fromConfig({
    schemes: [{ network, client: new ExactEvmScheme(payerAccount(chain, 1)) }],
    spendControls: { allowedAssets: [{ network, asset: usdc.address }] },
  });
  const accepts: PaymentRequirements = {
    scheme: "exact",
    network,
    asset: usdc.address,
    amount: "2500000",
    payTo: hot.address,
    maxTimeoutSeconds: 600,
    extra: { ...usdc.eip712 },
  };
  return client.createPaymentPayload({ x402Version: 2, resource: { url: resource }, accepts: [accepts] });
}

function settle(baseUrl: string, apiKey: string, p: PaymentPayload): Promise<Answer<any>> {
  return call(baseUrl, "POST", "/x402/v1/settle", {
    headers: { "x-api-key": apiKey },
    body: { x402Version: 2, paymentPayload: p, paymentRequirements: p.accepted },
  });
}

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

describe("an x402 settle killed mid-flight (child process, SIGKILL)", () => {
  let merchant: { id: string; apiKey: string } | undefined;

  it("after a restart the same settle answers the one transaction, and the invoice is paid once", async () => {
    for (const [i, point] of ["after_sign", "after_broadcast"].entries()) {
      const nonceBefore = await chain.client.getTransactionCount({ address: hot.address });
      const crashing = await service(point);
      merchant ??= await prepare(crashing.baseUrl);
      const p = await payload(`http://127.0.0.1/report/${i}`);
      // The settle waits for its transaction; the worker kills the process under it.
      const killed = await settle(crashing.baseUrl, merchant.apiKey, p).catch((error: unknown) => error);
      expect(killed).toBeInstanceOf(Error);
      await crashing.exited;
      expect(crashing.child.signalCode).toBe("SIGKILL");
      const afterCrash = await chain.client.getTransactionCount({ address: hot.address });
      expect(afterCrash).toBe(point === "after_sign" ? nonceBefore : nonceBefore + 1);

      const restarted = await service(null);
      try {
        const again = await settle(restarted.baseUrl, merchant.apiKey, p);
        expect(again.body, restarted.output()).toMatchObject({ success: true, network: `eip155:${chain.chainId}` });
        expect(await settle(restarted.baseUrl, merchant.apiKey, p)).toMatchObject({ body: again.body });
        const m = merchant;
        const invoice = await until("the invoice to complete", async () => {
          await chain.mine(1);
          const list = await call(restarted.baseUrl, "GET", "/public/v1/invoices?limit=1", {
            headers: { "x-api-key": m.apiKey },
          });
          const newest = list.body.data[0];
          return newest?.status === "completed" ? newest : null;
        });
        expect(invoice.description).toContain(`/report/${i}`);
        expect(await chain.client.getTransactionCount({ address: hot.address })).toBe(nonceBefore + 1);
        const balances = await adminCall(restarted.baseUrl, "GET", `/merchants/${m.id}/balances`);
        const available = (balances.body as { currency: string; available: string }[]).find(
          (b) => b.currency === "USDC",
        );
        // 2.5 USDC less the entry's network fee (1), once per payment.
        expect(available?.available).toBe(String(1.5 * (i + 1)));
      } finally {
        await restarted.stop();
      }
      await expectLedgerBalanced();
    }
  }, 400_000);
});
