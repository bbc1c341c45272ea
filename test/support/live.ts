// A service in live mode against the local chain: WALLET_MNEMONIC set, the `ethereum` network configured with the forwarder factory deployed, USDT pointed at the test token.

import { type Hex, parseUnits } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect } from "vitest";
import type { ChainClientFactory } from "../../src/chain/clients.ts";
import { deployFactory } from "../../src/chain/forwarders.ts";
import { rpcChainClient } from "../../src/chain/rpc.ts";
import type { Wallet } from "../../src/domain/chain.ts";
import { auditLedger } from "../../src/store/ledger.ts";
import { nextDepositIndex } from "../../src/store/networks.ts";
import type { Store } from "../../src/store/store.ts";
import { CHAIN_MNEMONIC, type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "./chain.ts";
import { lateBound } from "./fixture.ts";
import { createInvoice } from "./invoices.ts";
import { admin, createMerchant, merchant, startTestServer, type TestDatabase, type TestServer } from "./server.ts";

export const CONFIRMATIONS = 3;

export async function startLiveServer(
  chain: LocalChain,
  token: TestToken,
  options: {
    database?: TestDatabase;
    configure?: boolean;
    chainClientFactory?: ChainClientFactory;
    env?: Record<string, string>;
  } = {},
): Promise<TestServer> {
  const server = await startTestServer({
    env: { SERVICE_MODE: "live", WALLET_MNEMONIC: SERVICE_MNEMONIC, ...options.env },
    ...(options.database ? { database: options.database } : {}),
    // Short node timeouts: a test waits seconds, not the service's default, for a node that hangs.
    chainClientFactory: options.chainClientFactory ?? ((url) => rpcChainClient(url, { timeoutMs: 1500 })),
  });
  if (options.configure ?? true) await configureChain(server, chain, token);
  return server;
}

export async function configureChain(server: TestServer, chain: LocalChain, token: TestToken): Promise<void> {
  const network = await admin(server, "PUT", "/networks/ethereum", {
    chainId: chain.chainId,
    rpcUrl: chain.url,
    confirmations: CONFIRMATIONS,
  });
  if (network.status !== 200) throw new Error(`network: ${network.text}`);
  await deployServiceFactory(server, chain, "ethereum");
  const usdt = await admin(server, "PUT", "/currencies/USDT", usdtEntry(token));
  if (usdt.status !== 200) throw new Error(`currency: ${usdt.text}`);
}

/** The node account that pays for factory deployments in tests (anyone may pay: the owner is in the init code). */
const FACTORY_PAYER_INDEX = 4;

/**
 * The operator's deployment step (product §24) for a test service on `network`: the hot wallet's
 * factory is put on the chain by a node account (a stranger may pay for it, and it is the same
 * factory), then POST /admin/v1/networks/{network}/factory finds its code and records it, which
 * opens live crypto there. Paid by a node account so that the hot wallet's nonces, balance and
 * ledger stay what the tests of payouts, fundings and nonces expect; the hot-wallet path of the
 * endpoint is tested in test/chain/factoryDeployment.test.ts.
 */
export async function deployServiceFactory(
  server: TestServer,
  chain: Pick<LocalChain, "client">,
  network: string,
): Promise<void> {
  const hot = server.ctx.wallet?.hotAddress;
  if (!hot) throw new Error("the live server has no wallet");
  await putFactoryOnChain(chain, hot);
  const answer = await admin(server, "POST", `/networks/${network}/factory`);
  if (answer.status !== 200) throw new Error(`factory: ${answer.status} ${answer.text}`);
}

/** Deploys the factory owned by `owner` through the proxy, paid by a node account (nothing when it is there). */
export async function putFactoryOnChain(chain: Pick<LocalChain, "client">, owner: Hex): Promise<void> {
  const signer = mnemonicToAccount(CHAIN_MNEMONIC, { addressIndex: FACTORY_PAYER_INDEX });
  const deployed = await deployFactory({ client: chain.client, signer, owner });
  if (!deployed.ok) throw new Error(`factory deployment: ${deployed.error} ${deployed.detail ?? ""}`);
}

/**
 * Turns a just-created live invoice into what the service made before forwarders (product §24):
 * a deposit address derived from WALLET_MNEMONIC at the next deposit index, no deposit factory.
 * Invoices made before keep their derived addresses and are swept (funded with gas, then moved
 * with the deposit key) until drained: that legacy path is still production code, and the tests of
 * sweeps and gas fundings exercise it through invoices made this way.
 */
export async function asLegacyDerivedInvoice(server: TestServer, invoiceId: string): Promise<Hex> {
  const wallet = server.ctx.wallet;
  if (!wallet) throw new Error("the live server has no wallet");
  return legacyDerivedInvoice(server.ctx.store, wallet, invoiceId);
}

/** asLegacyDerivedInvoice on a store opened by the test (service processes of their own). */
export async function legacyDerivedInvoice(
  store: Store,
  wallet: Pick<Wallet, "deposits">,
  invoiceId: string,
): Promise<Hex> {
  const { index, address, updated } = await store.transaction(async (tx) => {
    const index = await nextDepositIndex(tx);
    if (wallet.deposits === null) throw new Error("a legacy derived invoice needs the mnemonic's deposit keys");
    const address = wallet.deposits.address(index);
    const updated = await tx.db
      .updateTable("invoices")
      .set({ deposit_address: address, deposit_index: index, deposit_factory: null })
      .where("id", "=", invoiceId)
      .where("deposit_factory", "is not", null)
      .executeTakeFirst();
    return { index, address, updated };
  });
  if (updated.numUpdatedRows !== 1n) {
    throw new Error(`invoice ${invoiceId} is not a new forwarder invoice (index ${index})`);
  }
  return address;
}

/** The body of PUT /admin/v1/currencies/USDT pointing USDT at the test token. */
export function usdtEntry(token: Pick<TestToken, "address" | "decimals">, overrides: Record<string, unknown> = {}) {
  return {
    fullName: "Tether USD",
    network: "ethereum",
    contractAddress: token.address,
    type: "stablecoin",
    icon: "/icons/usdt.svg",
    iconDark: "/icons/usdt-dark.svg",
    internalTicker: "USDT_ERC20",
    decimals: token.decimals,
    networkFee: "1",
    withdrawalMin: "10",
    withdrawalMax: "100000",
    rateUsd: "1",
    ...overrides,
  };
}

/** A merchant without fees (merchant_receive_amount = amount less the network fee). */
export async function liveMerchant(server: TestServer) {
  return createMerchant(server, { feePercent: "0" });
}

/** CreateInvoice in live mode (the same call as the sandbox tests'). */
export const liveInvoice = createInvoice;

export async function getInvoice(server: TestServer, apiKey: string, id: string): Promise<Record<string, any>> {
  const answer = await merchant(server, apiKey, "GET", `/public/v1/invoices/${id}`);
  if (answer.status !== 200) throw new Error(`get invoice: ${answer.status} ${answer.text}`);
  return answer.body;
}

/** One pass of the scanner (and sweeps) of this service, then of its screening worker (product §21). */
export async function scan(server: TestServer): Promise<number> {
  const loop = server.workers.loops.scanner;
  if (!loop) throw new Error("no scanner loop");
  const scanned = await loop.runOnce();
  return scanned + ((await server.workers.loops.screening?.runOnce()) ?? 0);
}

/** Mines `blocks` and scans until the scanner has caught up (bounded). */
export async function mineAndScan(server: TestServer, chain: LocalChain, blocks: number): Promise<void> {
  await chain.mine(blocks);
  for (let i = 0; i < 10; i++) if ((await scan(server)) === 0) return;
}

/** Asserts the ledger audit and answers it (for the report). */
export async function auditAndExpect(server: TestServer) {
  const audit = await auditLedger(server.ctx.store);
  for (const [currency, sum] of audit.sumsByCurrency) expect({ currency, sum }).toEqual({ currency, sum: 0n });
  expect(audit.mismatchedBalances).toEqual([]);
  expect(audit.negativeMerchantBalances).toEqual([]);
  // PRINT_LEDGER_AUDIT=1 prints each scenario's audit (for reports).
  if (process.env.PRINT_LEDGER_AUDIT === "1") {
    const sums = [...audit.sumsByCurrency].map(([currency, sum]) => `${currency}=${sum}`).join(" ");
    process.stdout.write(
      `ledger audit [${expect.getState().currentTestName}]: ${audit.movements} movements, ${audit.entries} entries, sums ${sums}, ${audit.mismatchedBalances.length} mismatched, ${audit.negativeMerchantBalances.length} negative\n`,
    );
  }
  return audit;
}

export function payer(chain: LocalChain, index: number): Hex {
  const account = chain.accounts[index];
  if (!account) throw new Error(`no account ${index}`);
  return account;
}

/** The deposit address stored on an invoice. */
export async function depositOf(server: TestServer, invoiceId: string): Promise<Hex> {
  const row = await server.ctx.store.db
    .selectFrom("invoices")
    .select("deposit_address")
    .where("id", "=", invoiceId)
    .executeTakeFirstOrThrow();
  return row.deposit_address as Hex;
}

/** The payment rows of an invoice. */
export function paymentRows(server: TestServer, invoiceId: string) {
  return server.ctx.store.db.selectFrom("invoice_payments").selectAll().where("invoice_id", "=", invoiceId).execute();
}

export interface LiveFixture {
  chain: LocalChain;
  token: TestToken;
  server: TestServer;
}

/** A local chain with the test token, 1000 USDT for payer 1, and a live service configured for it. */
export async function startLiveFixture(
  options: { database?: TestDatabase; env?: Record<string, string> } = {},
): Promise<LiveFixture> {
  const chain = await startLocalChain();
  const token = await chain.deployToken();
  const server = await startLiveServer(chain, token, options);
  await token.mint(payer(chain, 1), parseUnits("1000", token.decimals));
  await scan(server);
  return { chain, token, server };
}

/**
 * The live fixture for the whole file: started in `beforeAll` (a chain takes a while: 60 s), the
 * server then the chain closed in `afterAll`. Its fields stand for what the hook made.
 */
export function useLiveFixture(): LiveFixture {
  let fixture: LiveFixture | undefined;
  beforeAll(async () => {
    fixture = await startLiveFixture();
  }, 60_000);
  afterAll(async () => {
    await fixture?.server.close();
    await fixture?.chain.close();
  });
  return {
    chain: lateBound("the local chain", () => fixture?.chain),
    token: lateBound("the test token", () => fixture?.token),
    server: lateBound("the live server", () => fixture?.server),
  };
}

/** USDT minor units of a decimal text (the test token has 6 decimals). */
export const usdt = (text: string) => parseUnits(text, 6);

/** The hot wallet's outbox rows of one purpose, oldest first (nonces as numbers, as stored on either database). */
export async function outboxOf(server: TestServer, purpose: string) {
  const rows = await server.ctx.store.db
    .selectFrom("hot_transactions")
    .selectAll()
    .where("purpose", "=", purpose)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map((r) => ({ ...r, nonce: Number(r.nonce) }));
}

/** The nonce fills the outbox holds. */
export function fillsOf(server: TestServer) {
  return outboxOf(server, "fill");
}

/** The merchant's customers' deposits, newest first (one page of 100), through the public API. */
export async function listDeposits(server: TestServer, apiKey: string): Promise<Record<string, any>[]> {
  const page = await merchant(server, apiKey, "GET", "/public/v1/deposits?limit=100");
  expect(page.status, page.text).toBe(200);
  return page.body.data;
}

/** One of the merchant's deposits, through the public API. */
export async function getDeposit(server: TestServer, apiKey: string, id: string): Promise<Record<string, any>> {
  const one = await merchant(server, apiKey, "GET", `/public/v1/deposits/${id}`);
  expect(one.status, one.text).toBe(200);
  return one.body;
}
