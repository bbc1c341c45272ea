// Prepares a service from its configuration: the sealing key, the store, the admin token and, on a new sandbox store, the demo merchant.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pino } from "pino";
import type { ServiceContext } from "./app/context.ts";
import { RateService } from "./app/rates.ts";
import { chainPaymentSettler } from "./app/recordChainPayment.ts";
import { type ChainClientFactory, ChainClients } from "./chain/clients.ts";
import { gasRunways } from "./chain/gasRunway.ts";
import { hotWalletOutbox } from "./chain/hotWallet.ts";
import type { Config } from "./config.ts";
import { ConfigError } from "./config.ts";
import type { CardProvider } from "./domain/cardProvider.ts";
import type { Wallet } from "./domain/chain.ts";
import { newRowId } from "./domain/ids.ts";
import { merchantAccount, movement, SYSTEM_ACCOUNTS, transfer } from "./domain/ledger.ts";
import { assert } from "./domain/result.ts";
import type { ScreeningSources } from "./domain/screening.ts";
import {
  registerChainGauges,
  registerGasGauges,
  registerScreeningGauges,
  registerStoreGauges,
  ServiceMetrics,
} from "./metrics.ts";
import { ScreeningListFile } from "./screening/listFile.ts";
import { seedCatalog } from "./store/currencies.ts";
import { postMovement } from "./store/ledger.ts";
import { boxOpensStoredSecrets, insertMerchant, insertWithdrawalMethod, issueApiKey } from "./store/merchants.ts";
import { listNetworks } from "./store/networks.ts";
import { hashToken, newAdminToken, parseEncryptionKey, SecretBox } from "./store/secrets.ts";
import { insertSettingOnce, readSetting } from "./store/settings.ts";
import { nowIso, openStore, type Store, type StoreOptions, sqlitePath } from "./store/store.ts";

export interface FirstStart {
  /** Set when this start generated the admin token. */
  adminToken: string | null;
  demo: { merchantId: string; email: string; apiKey: string; secretKey: string; withdrawalMethodId: number } | null;
}

export interface Prepared {
  ctx: ServiceContext;
  firstStart: FirstStart;
}

/** For SQLite without SECRET_ENCRYPTION_KEY: a key file beside the database, created once with mode 0600. */
function sqliteKeyFile(databaseUrl: string): Buffer {
  const path = sqlitePath(databaseUrl);
  if (path === ":memory:") throw new ConfigError("SECRET_ENCRYPTION_KEY is required for an in-memory store");
  const file = join(dirname(path), "secret.key");
  mkdirSync(dirname(file), { recursive: true });
  try {
    writeFileSync(file, `${randomBytes(32).toString("hex")}\n`, {
      mode: 0o600,
      flag: "wx",
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return parseEncryptionKey(readFileSync(file, "utf8"));
}

const DEMO_EMAIL = "demo@merchant.test";
const DEMO_FUNDS_USDT = 1_000_000_000n; // 1000 USDT in minor units, so withdrawals can be tried at once

/** `storeOptions` lets tests hold or fail the store's fsync; the service passes none. */
export interface PrepareOptions {
  /** Tests: how node clients are made (default: JSON-RPC over HTTP). */
  chainClientFactory?: ChainClientFactory;
  /**
   * An open store to serve instead of opening DATABASE_URL's: the simulation's processes share one
   * (simulation/process.ts). The caller closes it.
   */
  store?: Store;
  /** The wallet of WALLET_MNEMONIC, already derived (the simulation restarts processes many times a second). */
  wallet?: Wallet;
}

export async function prepare(
  config: Config,
  storeOptions: StoreOptions = {},
  options: PrepareOptions = {},
): Promise<Prepared> {
  const key = config.secretEncryptionKey
    ? parseEncryptionKey(config.secretEncryptionKey)
    : sqliteKeyFile(config.databaseUrl);
  const box = new SecretBox(key);
  const store =
    options.store ??
    (await openStore(config.databaseUrl, {
      poolSize: config.databasePoolSize,
      ...storeOptions,
      sqliteSynchronous: config.sqliteSynchronous,
    }));
  try {
    // A key that cannot open what the store holds would make every signed operation a 500: refuse to start.
    if (!(await boxOpensStoredSecrets(store, box))) {
      throw new ConfigError(
        "SECRET_ENCRYPTION_KEY cannot open the secrets stored in this database: start with the key it was created with",
      );
    }
    await store.transaction((tx) => seedCatalog(tx));

    const { adminToken, adminTokenHash } = await adminTokenOf(store, config);
    const demo = await createDemoOnFirstStart(store, box, config);

    const metrics = new ServiceMetrics();
    registerStoreGauges(metrics, store);
    registerChainGauges(metrics, store);
    const wallet = options.wallet ?? (await walletOf(config, store, box, metrics));
    const chains = new ChainClients(options.chainClientFactory);
    registerGasGauges(metrics, () => gasRunways({ store, box, hot: wallet?.hotAddress ?? null, chains }));
    // The outbox logs every transaction it signs on its own line (it runs for requests and workers alike).
    const outbox = hotWalletOutbox({ store, box, wallet, chains }, outboxOptionsOf(config));
    const rates = new RateService(store, box, metrics, {
      cacheMs: config.rateCacheMs,
      timeoutMs: config.rateReadTimeoutMs,
      // viem loads at the first feed read: a service with static rates only never pays for it.
      loadReaderFactory: async () => (await import("./rates/chainlink.ts")).chainlinkFeedReader,
    });
    const screening = await screeningSourcesOf(config);
    registerScreeningGauges(metrics, store, screening);
    return {
      ctx: {
        config,
        store,
        box,
        adminTokenHash,
        metrics,
        wallet,
        chains,
        outbox,
        rates,
        cardProvider: await cardProviderOf(config),
        screening,
      },
      firstStart: { adminToken, demo },
    };
  } catch (error) {
    if (!options.store) await store.close();
    throw error;
  }
}

/** The outbox port's clock, log, and how a payer's signed payment settles (product §26, §28). */
function outboxOptionsOf(config: Config) {
  const { logLevel, publicBaseUrl } = config;
  return {
    now: () => new Date(),
    log: pino({ level: logLevel }),
    publicBaseUrl,
    settlePayment: chainPaymentSettler(publicBaseUrl),
  };
}

/** Bound on the start-up check's probes: one per configured chain, at most this many. */
const MAX_SIGNER_PROBES = 20;

/**
 * The wallet: a local one from WALLET_MNEMONIC, or remote signers (SIGNER_URL, SIGNER_URL_<NETWORK>)
 * checked at once (docs/signer.md): a signer that answers but does not sign for SIGNER_ADDRESS
 * keeps the process from starting; one that is down (no connection, no answer in time) does not:
 * the service serves and that network's payouts wait for it. None when neither is set. Its modules
 * (viem) load only then: they cost about 16 MiB.
 */
async function walletOf(config: Config, store: Store, box: SecretBox, metrics: ServiceMetrics): Promise<Wallet | null> {
  if (config.walletMnemonic !== null) {
    return (await import("./chain/wallet.ts")).hdWallet(config.walletMnemonic.reveal());
  }
  if (config.signer === null) return null;
  const { RemoteSigners, registerSignerGauge, SIGNER_DOWN_CODES } = await import("./chain/signers.ts");
  const { address } = config.signer;
  const signers = new RemoteSigners(config.signer, pino({ level: config.logLevel }));
  registerSignerGauge(metrics, signers);
  // One probe per configured network on its chain (a signer may be bound to one chain, as a node
  // or web3signer is), bounded. None configured yet (a new store): SIGNER_URL on the chain it says
  // it is bound to, so that a signer bound to its chain can start the store; chain 1 when it does not say.
  const networks = (await listNetworks(store, box)).slice(0, MAX_SIGNER_PROBES);
  const probes = networks.length > 0 ? networks : [{ name: "", chainId: (await signers.defaultChainId()) ?? 1 }];
  const failures = await Promise.all(
    probes.map(async (n) => ({ network: n.name, chainId: n.chainId, error: await signers.probe(n.name, n.chainId) })),
  );
  for (const { network, chainId, error } of failures) {
    if (error === null || SIGNER_DOWN_CODES.includes(error.code)) continue;
    const on = network === "" ? `chain ${chainId}` : `network ${network} (chain ${chainId})`;
    throw new ConfigError(
      `${signers.variableOf(network)}: the start-up check failed for SIGNER_ADDRESS ${address} on ${on}: ${error.message} (${error.code}); nothing was broadcast (docs/signer.md)`,
    );
  }
  return { hot: (network) => signers.for(network), hotAddress: address, deposits: null, signers };
}

/** The admin token's hash: the configured token's, or one generated and stored by the first process (shown once). */
async function adminTokenOf(
  store: Store,
  config: Config,
): Promise<{ adminToken: string | null; adminTokenHash: string }> {
  let adminToken: string | null = null;
  let adminTokenHash: string;
  if (config.adminToken) {
    adminTokenHash = hashToken(config.adminToken);
  } else {
    const candidate = newAdminToken();
    if (await store.transaction((tx) => insertSettingOnce(tx, "admin_token_hash", hashToken(candidate)))) {
      adminToken = candidate;
    }
    const stored = await readSetting(store, "admin_token_hash");
    assert(stored !== null, "admin token hash was written");
    adminTokenHash = stored;
  }
  return { adminToken, adminTokenHash };
}

/** The sandbox's demo merchant, funded, created by the first process to mark the store initialized; null otherwise. */
async function createDemoOnFirstStart(store: Store, box: SecretBox, config: Config) {
  return store.transaction(async (tx) => {
    const now = nowIso();
    // The first process to mark the store initialized is the only one that creates the demo merchant.
    if (!(await insertSettingOnce(tx, "initialized_at", now))) return null;
    if (config.serviceMode !== "sandbox") return null;
    const merchant = await insertMerchant(
      tx,
      box,
      {
        email: DEMO_EMAIL,
        merchantName: "Demo Merchant",
        directorName: null,
        website: null,
        logo: null,
        whitelabeling: false,
        feePercent: "1",
        feesPaidBy: "merchant",
      },
      now,
    );
    const issued = await issueApiKey(tx, box, merchant.id, false, now);
    const method = await insertWithdrawalMethod(
      tx,
      {
        merchantId: merchant.id,
        currency: "USDT",
        address: "0x000000000000000000000000000000000000dEaD",
        label: "Demo wallet",
      },
      now,
    );
    const funded = await postMovement(
      tx,
      movement({
        cause: "adjustment",
        causeId: newRowId(),
        kind: "adjustment",
        memo: "sandbox demo funds",
        postings: transfer(SYSTEM_ACCOUNTS.operatorAdjustments, merchantAccount(merchant.id), "USDT", DEMO_FUNDS_USDT),
      }),
      now,
    );
    assert(funded.ok, "crediting a new merchant cannot fail");
    return {
      merchantId: merchant.id,
      email: DEMO_EMAIL,
      apiKey: issued.apiKey,
      secretKey: issued.secretKey ?? "",
      withdrawalMethodId: method.id,
    };
  });
}

/**
 * The card provider of live mode (product §20); the sandbox simulates card payments itself. The
 * SDK loads only where it is used.
 */
async function cardProviderOf(config: Config): Promise<CardProvider | null> {
  if (config.serviceMode !== "live" || config.cardProvider === null) return null;
  const { stripeCardProvider } = await import("./cardProvider/stripe.ts");
  return stripeCardProvider(config.cardProvider);
}

/**
 * Screening's sources (product §21). A list file that cannot be read at start stops the start: a
 * service that believed it screened against an empty list would let listed money through.
 */
async function screeningSourcesOf(config: Config): Promise<ScreeningSources> {
  const { listPath, provider } = config.screening;
  let list: ScreeningListFile | null = null;
  if (listPath !== null) {
    list = new ScreeningListFile(listPath, stderrLog);
    await list.refresh();
    const status = list.status();
    if (status.loadedAt === null) throw new ConfigError(`SCREENING_LIST: ${status.lastError ?? "not loaded"}`);
  }
  if (provider === null) return { list, provider: null };
  const { ChainalysisScreening } = await import("./screening/chainalysis.ts");
  return {
    list,
    provider: new ChainalysisScreening({
      url: provider.url,
      apiKey: provider.apiKey.reveal(),
      timeoutMs: config.screening.providerTimeoutMs,
      cacheMs: config.screening.cacheMs,
    }),
  };
}

/** Screening's list reports its reloads on stderr as JSON lines, like the service's log. */
const stderrLog = {
  warn: (fields: object, msg: string) =>
    process.stderr.write(`${JSON.stringify({ level: 40, time: Date.now(), ...fields, msg })}\n`),
  info: (fields: object, msg: string) =>
    process.stderr.write(`${JSON.stringify({ level: 30, time: Date.now(), ...fields, msg })}\n`),
};

/** The once-only banner of a first start: the credentials exist nowhere else in plain text. */
export function firstStartBanner(config: Config, firstStart: FirstStart): string | null {
  if (!firstStart.adminToken && !firstStart.demo) return null;
  const lines = ["", "=== First start: these credentials are shown once, store them now ==="];
  if (firstStart.adminToken) lines.push(`Admin token (ADMIN_TOKEN):   ${firstStart.adminToken}`);
  if (firstStart.demo) {
    lines.push(
      `Demo merchant:               ${firstStart.demo.email} (${firstStart.demo.merchantId})`,
      `Demo API key (x-api-key):    ${firstStart.demo.apiKey}`,
      `Demo secret key (signing):   ${firstStart.demo.secretKey}`,
      `Demo withdrawal method id:   ${firstStart.demo.withdrawalMethodId} (USDT, balance 1000 USDT)`,
    );
  }
  lines.push(
    `API reference:               ${config.publicBaseUrl}/docs`,
    `Try:  curl -H 'x-api-key: <API key>' ${config.publicBaseUrl}/public/v1/me`,
    "=====================================================================",
    "",
  );
  return lines.join("\n");
}
