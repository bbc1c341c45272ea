// Service configuration from environment variables (product §2); a `.env` file may supply them.
import { isIP } from "node:net";
import { configVariable } from "./configVariables.ts";
import { checkEvmAddress } from "./domain/evmAddress.ts";
import { normalizeMnemonic } from "./domain/mnemonic.ts";
import type { ServiceMode } from "./domain/serviceMode.ts";
import { dialectOf } from "./store/dialect.ts";

export type { ServiceMode };

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  serviceMode: ServiceMode;
  /** From ADMIN_TOKEN; when absent one is generated on first start and its hash kept in the store. */
  adminToken: string | null;
  publicBaseUrl: string;
  /** From SECRET_ENCRYPTION_KEY; when absent (SQLite only) a key file in the data folder is used. */
  secretEncryptionKey: string | null;
  rateLimitPerMinute: number;
  /** Requests per minute per client address on the operator API; 0 turns it off. */
  adminRateLimitPerMinute: number;
  /** Requests with an unknown API key per minute per client address before they get 429 (counted in the store); 0 turns it off. */
  unknownKeyRateLimitPerMinute: number;
  /** Requests per minute per client address to the payer's surfaces, which take no credentials (/pay, /l, /refund); 0 turns it off. */
  payerRateLimitPerMinute: number;
  /** Requests per minute per client address to the card provider's webhook (signed, so generous); 0 turns it off. */
  webhookRateLimitPerMinute: number;
  /** Failed operator tokens per minute per client address (counted in the store before each check); 0 turns it off. */
  adminTokenFailuresPerMinute: number;
  /**
   * TRUST_PROXY: the addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed
   * (Fastify's trustProxy); empty (the default) believes none, and the client address is the socket's peer.
   */
  trustProxy: string[];
  /** LINK_INVOICES_PER_ADDRESS_PER_MINUTE: invoices one client address may make through payment links (counted in the store); 0 turns it off. */
  linkInvoicesPerAddressPerMinute: number;
  /** LINK_INVOICES_PER_LINK_PER_MINUTE: invoices one payment link may make (counted in the store); 0 turns it off. */
  linkInvoicesPerLinkPerMinute: number;
  /** LINK_OPEN_INVOICES: a payment link's open unpaid invoices at most; beyond it a payer is asked to try again later. */
  linkOpenInvoices: number;
  /** PAY_STREAMS_PER_ADDRESS: the payer's page live streams one client address may hold open in a process (product §18). */
  payStreamsPerAddress: number;
  /** Bound of a whole request, body included (Node's requestTimeout): a slow body is cut off with 408. */
  requestTimeoutMs: number;
  /** Bound of the request line and headers (Node's headersTimeout). */
  headersTimeoutMs: number;
  /** Bound of a connection's inactivity (Node's socket timeout, Fastify's connectionTimeout). */
  connectionTimeoutMs: number;
  /** How long an idle keep-alive connection is kept open. */
  keepAliveTimeoutMs: number;
  sandboxPayoutDelayMs: number;
  /** WITHDRAWAL_METHOD_COOLING_OFF_MINUTES: how long a method added in the dashboard waits before it takes withdrawals (product §14). */
  withdrawalMethodCoolingOffMs: number;
  /** Bound of one callback delivery attempt. */
  callbackTimeoutMs: number;
  logLevel: string;
  /** From METRICS_TOKEN: a bearer token for GET /metrics only (the admin token is accepted too). */
  metricsToken: string | null;
  /** SQLITE_SYNCHRONOUS: FULL (default, durable) or NORMAL (only to measure the cost of durability). */
  sqliteSynchronous: "FULL" | "NORMAL";
  /**
   * WALLET_MNEMONIC (product §12), or null when the wallet is not set (live mode then takes no
   * crypto). A SecretText: logging or serializing the configuration never shows the phrase.
   */
  walletMnemonic: SecretText | null;
  /** SIGNER_URL, SIGNER_URL_<NETWORK>, SIGNER_ADDRESS and SIGNER_TIMEOUT_MS: the hot wallet's remote signers (product §24), or null. */
  signer: SignerConfig | null;
  /** CHAIN_PAYOUT_POLL_MS: pause of the live payout worker between batches that found nothing to do. */
  chainPayoutPollMs: number;
  /** FLUSH_BATCH_SIZE: a flush goes once this many forwarder deposits wait on a network (1..100, product §24). */
  flushBatchSize: number;
  /** FLUSH_MAX_WAIT_MS: or once the oldest waiting deposit has waited this long (1 s .. 1 day). */
  flushMaxWaitMs: number;
  /** DATABASE_POOL_SIZE: PostgreSQL connections per process (the pool's bound). */
  databasePoolSize: number;
  /** CALLBACK_ATTEMPT_RETENTION_DAYS: callback attempts older than this are deleted. */
  callbackAttemptRetentionDays: number;
  /** AUDIT_RETENTION_DAYS: dashboard audit rows older than this are deleted. */
  auditRetentionDays: number;
  /** RATE_CACHE_MS: how long a feed's reading is shared between requests before the node is asked again (product §22). */
  rateCacheMs: number;
  /** RATE_READ_TIMEOUT_MS: bound of one feed read; a slower node makes the rate unavailable. */
  rateReadTimeoutMs: number;
  /** CARD_PROVIDER and its settings (product §20), or null: live mode then takes no fiat. */
  cardProvider: CardProviderConfig | null;
  /** Screening's sources and bounds (product §21). */
  screening: ScreeningConfig;
}

/** SCREENING_* (product §21): the list file, the provider (its key a SecretText), and the retry bounds. */
export interface ScreeningConfig {
  /** SCREENING_LIST: path of the list file, or null. */
  listPath: string | null;
  /** SCREENING_PROVIDER_URL and SCREENING_PROVIDER_KEY, or null when no provider is configured. */
  provider: { url: string; apiKey: SecretText } | null;
  /** SCREENING_PROVIDER_TIMEOUT_MS: bound of one provider call. */
  providerTimeoutMs: number;
  /** SCREENING_CACHE_SECONDS: how long a provider's answer on an address is reused. */
  cacheMs: number;
  /** SCREENING_RETRY_MS: delay before an unscreened payment is tried again (doubling, at most an hour). */
  retryBaseMs: number;
  /** SCREENING_MAX_ATTEMPTS: attempts without an answer before the payment goes to the operator (aml_check). */
  maxAttempts: number;
}

function screeningConfig(env: NodeJS.ProcessEnv): ScreeningConfig {
  const url = env.SCREENING_PROVIDER_URL ?? "";
  const key = env.SCREENING_PROVIDER_KEY ?? "";
  if ((url === "") !== (key === "")) {
    throw new ConfigError("SCREENING_PROVIDER_URL and SCREENING_PROVIDER_KEY go together: set both, or neither");
  }
  if (url !== "") {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError("SCREENING_PROVIDER_URL must be an http(s) URL");
    }
    if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
      throw new ConfigError("SCREENING_PROVIDER_URL must be an http(s) URL");
    }
  }
  return {
    listPath: env.SCREENING_LIST || null,
    provider: url === "" ? null : { url: url.replace(/\/+$/, ""), apiKey: new SecretText(key) },
    providerTimeoutMs: setting(env, "SCREENING_PROVIDER_TIMEOUT_MS"),
    cacheMs: setting(env, "SCREENING_CACHE_SECONDS") * 1000,
    retryBaseMs: setting(env, "SCREENING_RETRY_MS"),
    maxAttempts: setting(env, "SCREENING_MAX_ATTEMPTS"),
  };
}

/** The card provider's settings; the keys are SecretTexts, never logged or answered. */
export interface CardProviderConfig {
  kind: "stripe";
  secretKey: SecretText;
  webhookSecret: SecretText;
  /** STRIPE_API_BASE: the provider's API address (tests point it at a local double). */
  apiBase: string;
}

export const STRIPE_DEFAULT_API_BASE = "https://api.stripe.com";

/**
 * CARD_PROVIDER=stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET; any of them without the
 * others is a half configuration, refused at start rather than found out by the first payer.
 */
function cardProvider(env: NodeJS.ProcessEnv): CardProviderConfig | null {
  const kind = env.CARD_PROVIDER ?? "";
  const secretKey = env.STRIPE_SECRET_KEY ?? "";
  const webhookSecret = env.STRIPE_WEBHOOK_SECRET ?? "";
  const apiBase = env.STRIPE_API_BASE ?? "";
  if (kind === "") {
    const stray = ["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "STRIPE_API_BASE"].filter(
      (n) => (env[n] ?? "") !== "",
    );
    if (stray.length > 0) {
      throw new ConfigError(`${stray.join(", ")} set without CARD_PROVIDER: set CARD_PROVIDER=stripe, or remove them`);
    }
    return null;
  }
  if (kind !== "stripe") throw new ConfigError(`CARD_PROVIDER must be stripe, got ${JSON.stringify(kind)}`);
  const missing = [
    ["STRIPE_SECRET_KEY", secretKey],
    ["STRIPE_WEBHOOK_SECRET", webhookSecret],
  ].filter(([, value]) => value === "");
  if (missing.length > 0) {
    throw new ConfigError(
      `CARD_PROVIDER=stripe needs ${missing.map(([name]) => name).join(" and ")} (half a card provider configuration is refused)`,
    );
  }
  // The messages never repeat the keys: they are secrets even when mistyped.
  if (!/^(sk|rk)_[A-Za-z0-9_]{8,}$/.test(secretKey)) {
    throw new ConfigError("STRIPE_SECRET_KEY must be a Stripe secret or restricted key (sk_… or rk_…)");
  }
  if (!/^whsec_[A-Za-z0-9+/=_-]{8,}$/.test(webhookSecret)) {
    throw new ConfigError("STRIPE_WEBHOOK_SECRET must be the endpoint's signing secret (whsec_…)");
  }
  let base = STRIPE_DEFAULT_API_BASE;
  if (apiBase !== "") {
    let url: URL;
    try {
      url = new URL(apiBase);
    } catch {
      throw new ConfigError("STRIPE_API_BASE must be an http(s) URL");
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.pathname !== "/" || url.search !== "") {
      throw new ConfigError("STRIPE_API_BASE must be an http(s) origin without a path, e.g. https://api.stripe.com");
    }
    base = url.origin;
  }
  return {
    kind: "stripe",
    secretKey: new SecretText(secretKey),
    webhookSecret: new SecretText(webhookSecret),
    apiBase: base,
  };
}

/** A remote signer (docs/signer.md): its URL (a SecretText: it may hold credentials) and the hot wallet's address there. */
export interface SignerConfig {
  /** SIGNER_URL: the signer of every network without its own. */
  url: SecretText;
  /**
   * SIGNER_URL_<NETWORK>: a network's own signer (web3signer and KMS signers are bound to one chain),
   * keyed by the variable's suffix (signerUrlSuffix of the network's name).
   */
  networkUrls: ReadonlyMap<string, SecretText>;
  /** The hot wallet's address at every signer, EIP-55 checksummed: one for every network (forwarders depend on it). */
  address: `0x${string}`;
  /** Bound of one signing request. */
  timeoutMs: number;
}

/** The variable naming a network's own signer: SIGNER_URL_ and its name upper-cased, other than letters and digits as `_`. */
export function signerUrlSuffix(network: string): string {
  return network.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

/** An http(s) URL, or a ConfigError naming the variable (never the value: it may hold credentials). */
function signerUrl(name: string, url: string): SecretText {
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (parsed === null || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
    throw new ConfigError(`${name} must be an http(s) URL`);
  }
  return new SecretText(url);
}

/** A per-network variable (`SIGNER_URL_<NETWORK>`): the set ones, by their suffix. */
function perNetwork(env: NodeJS.ProcessEnv, pattern: string): Map<string, SecretText> {
  const name = configVariable(pattern).name;
  const prefix = name.slice(0, name.indexOf("<"));
  const urls = new Map<string, SecretText>();
  for (const [variable, value] of Object.entries(env)) {
    if (!variable.startsWith(prefix) || (value ?? "") === "") continue;
    const suffix = variable.slice(prefix.length);
    if (!/^[A-Z0-9_]{1,32}$/.test(suffix)) {
      throw new ConfigError(
        `${variable}: the network's name is upper-cased, other than letters and digits as _ (SIGNER_URL_BASE_SEPOLIA)`,
      );
    }
    urls.set(suffix, signerUrl(variable, value as string));
  }
  return urls;
}

/**
 * SIGNER_URL and SIGNER_ADDRESS go together, and exclude WALLET_MNEMONIC: with a remote signer no
 * phrase is in the process at all. SIGNER_URL_<NETWORK> needs SIGNER_URL, the signer of the other
 * networks (and of the start's probe when none is configured yet). Messages never repeat a URL (it
 * may hold credentials).
 */
function signerConfig(env: NodeJS.ProcessEnv): SignerConfig | null {
  const url = env.SIGNER_URL ?? "";
  const address = env.SIGNER_ADDRESS ?? "";
  const networkUrls = perNetwork(env, "SIGNER_URL_<NETWORK>");
  // One hot wallet address on every network: a per-network address is refused rather than ignored.
  const perNetworkAddress = Object.keys(env).find((n) => n.startsWith("SIGNER_ADDRESS_") && (env[n] ?? "") !== "");
  if (perNetworkAddress !== undefined) {
    throw new ConfigError(
      `${perNetworkAddress}: every network's signer signs for the one SIGNER_ADDRESS (the forwarders' factory and deposit addresses depend on it); remove it`,
    );
  }
  if ((url === "") !== (address === "")) {
    throw new ConfigError("SIGNER_URL and SIGNER_ADDRESS go together: set both, or neither");
  }
  if (url === "") {
    if (env.SIGNER_TIMEOUT_MS)
      throw new ConfigError("SIGNER_TIMEOUT_MS set without SIGNER_URL: set both, or remove it");
    if (networkUrls.size > 0) {
      throw new ConfigError(
        `${[...networkUrls.keys()].map((s) => `SIGNER_URL_${s}`).join(", ")} set without SIGNER_URL and SIGNER_ADDRESS: SIGNER_URL signs for the networks without their own`,
      );
    }
    return null;
  }
  if ((env.WALLET_MNEMONIC ?? "").trim() !== "") {
    throw new ConfigError(
      "WALLET_MNEMONIC must not be set with SIGNER_URL: a remote signer holds the hot wallet's key, and no phrase may be in the process",
    );
  }
  const defaultUrl = signerUrl("SIGNER_URL", url);
  const checked = checkEvmAddress(address);
  if (!checked.ok) throw new ConfigError(`SIGNER_ADDRESS is not a valid address: ${checked.detail ?? "invalid"}`);
  return {
    url: defaultUrl,
    networkUrls,
    address: checked.value,
    timeoutMs: setting(env, "SIGNER_TIMEOUT_MS"),
  };
}

/** A secret held in memory: `reveal()` answers it; printing, inspecting or JSON shows `[redacted]`. */
export class SecretText {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  reveal(): string {
    return this.#value;
  }
  toJSON(): string {
    return "[redacted]";
  }
  toString(): string {
    return "[redacted]";
  }
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return "[redacted]";
  }
}

function walletMnemonic(raw: string | undefined): SecretText | null {
  if (raw === undefined || raw.trim() === "") return null;
  const normalized = normalizeMnemonic(raw);
  // The message never repeats the phrase: it is a secret even when mistyped.
  if (normalized === null) {
    throw new ConfigError(
      "WALLET_MNEMONIC is not a valid BIP-39 English phrase (12 to 24 words with a valid checksum)",
    );
  }
  return new SecretText(normalized);
}

export class ConfigError extends Error {}

/** At most this many TRUST_PROXY entries: a list of proxies, not of clients. */
const TRUST_PROXY_ENTRIES = 100;

/** TRUST_PROXY: comma-separated IPv4/IPv6 addresses or CIDR ranges (`10.0.0.0/8`, `::1`); none by default. */
export function trustProxy(raw: string | undefined): string[] {
  if (raw === undefined || raw.trim() === "") return [];
  const entries = raw.split(",").map((e) => e.trim());
  if (entries.length > TRUST_PROXY_ENTRIES)
    throw new ConfigError(`TRUST_PROXY takes at most ${TRUST_PROXY_ENTRIES} addresses or ranges`);
  for (const entry of entries) {
    const [address = "", prefix, ...rest] = entry.split("/");
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || rest.length > 0 || !prefixOk) {
      throw new ConfigError(
        `TRUST_PROXY must list IP addresses or CIDR ranges separated by commas, got ${JSON.stringify(entry)}`,
      );
    }
  }
  return entries;
}

/**
 * An operator token is compared with what clients send in `authorization: Bearer <token>`, which
 * carries only printable ASCII without spaces: any other character could never match.
 */
export function checkAdminToken(token: string): void {
  if (token.length < 16) throw new ConfigError("ADMIN_TOKEN must be at least 16 characters");
  if (token.length > 512) throw new ConfigError("ADMIN_TOKEN must be at most 512 characters");
  if (!/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError(
      "ADMIN_TOKEN must be printable ASCII without spaces (characters ! to ~); it is sent in an HTTP header",
    );
  }
}

/** A whole-number variable read with the bounds and fallback of its definition (src/configVariables.ts). */
function setting(env: NodeJS.ProcessEnv, name: string): number {
  const bounds = configVariable(name).integer;
  if (bounds === undefined) throw new Error(`${name} is not defined as a whole number`);
  return integer(env, name, bounds.fallback, bounds.min, bounds.max);
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}`);
  return value;
}

function sqliteSynchronous(raw: string | undefined): "FULL" | "NORMAL" {
  if (raw === undefined || raw === "" || raw === "FULL") return "FULL";
  if (raw === "NORMAL") return "NORMAL";
  throw new ConfigError("SQLITE_SYNCHRONOUS must be FULL or NORMAL");
}

/** The live crypto rail's settings: the hot wallet's key or signer, payout polling, flush batching. */
function chainConfig(env: NodeJS.ProcessEnv) {
  return {
    walletMnemonic: walletMnemonic(env.WALLET_MNEMONIC),
    signer: signerConfig(env),
    chainPayoutPollMs: setting(env, "CHAIN_PAYOUT_POLL_MS"),
    // At most MAX_FLUSH_BATCH (the factory's bound); the wait bounds how long a deposit stays in its forwarder.
    flushBatchSize: setting(env, "FLUSH_BATCH_SIZE"),
    flushMaxWaitMs: setting(env, "FLUSH_MAX_WAIT_MS"),
  };
}

/** The request limits and throttles (0 switches a per-minute limit off). */
function requestLimitsConfig(env: NodeJS.ProcessEnv) {
  return {
    rateLimitPerMinute: setting(env, "RATE_LIMIT_PER_MINUTE"),
    adminRateLimitPerMinute: setting(env, "ADMIN_RATE_LIMIT_PER_MINUTE"),
    unknownKeyRateLimitPerMinute: setting(env, "UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE"),
    payerRateLimitPerMinute: setting(env, "PAYER_RATE_LIMIT_PER_MINUTE"),
    webhookRateLimitPerMinute: setting(env, "WEBHOOK_RATE_LIMIT_PER_MINUTE"),
    adminTokenFailuresPerMinute: setting(env, "ADMIN_TOKEN_FAILURES_PER_MINUTE"),
    linkInvoicesPerAddressPerMinute: setting(env, "LINK_INVOICES_PER_ADDRESS_PER_MINUTE"),
    linkInvoicesPerLinkPerMinute: setting(env, "LINK_INVOICES_PER_LINK_PER_MINUTE"),
    linkOpenInvoices: setting(env, "LINK_OPEN_INVOICES"),
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = setting(env, "PORT");
  const host = env.HOST || "127.0.0.1";
  const databaseUrl = env.DATABASE_URL || "sqlite:./data/payments.db";
  try {
    dialectOf(databaseUrl);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  const mode = env.SERVICE_MODE || "sandbox";
  if (mode !== "sandbox" && mode !== "live") throw new ConfigError("SERVICE_MODE must be sandbox or live");
  const secretEncryptionKey = env.SECRET_ENCRYPTION_KEY || null;
  if (secretEncryptionKey === null && dialectOf(databaseUrl) === "postgres") {
    throw new ConfigError("SECRET_ENCRYPTION_KEY is required with PostgreSQL (64 hex characters)");
  }
  const adminToken = env.ADMIN_TOKEN || null;
  if (adminToken !== null) checkAdminToken(adminToken);
  const requestTimeoutMs = setting(env, "REQUEST_TIMEOUT_MS");
  const headersTimeoutMs = setting(env, "HEADERS_TIMEOUT_MS");
  // Node requires headersTimeout <= requestTimeout: the headers are part of the request.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError("HEADERS_TIMEOUT_MS must not be greater than REQUEST_TIMEOUT_MS");
  }
  const metricsToken = env.METRICS_TOKEN || null;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,512}$/.test(metricsToken))
    throw new ConfigError("METRICS_TOKEN must be 16 to 512 printable ASCII characters without spaces");
  return {
    port,
    host,
    databaseUrl,
    serviceMode: mode,
    adminToken,
    publicBaseUrl: (env.PUBLIC_BASE_URL || `http://${host.includes(":") ? `[${host}]` : host}:${port}`).replace(
      /\/+$/,
      "",
    ),
    secretEncryptionKey,
    ...requestLimitsConfig(env),
    trustProxy: trustProxy(env.TRUST_PROXY),
    payStreamsPerAddress: setting(env, "PAY_STREAMS_PER_ADDRESS"),
    requestTimeoutMs,
    headersTimeoutMs,
    connectionTimeoutMs: setting(env, "CONNECTION_TIMEOUT_MS"),
    keepAliveTimeoutMs: setting(env, "KEEP_ALIVE_TIMEOUT_MS"),
    sandboxPayoutDelayMs: setting(env, "SANDBOX_PAYOUT_DELAY_MS"),
    // Default: 24 hours in live mode, none in the sandbox; at most 30 days.
    withdrawalMethodCoolingOffMs:
      integer(env, "WITHDRAWAL_METHOD_COOLING_OFF_MINUTES", mode === "live" ? 1440 : 0, 0, 43_200) * 60_000,
    callbackTimeoutMs: setting(env, "CALLBACK_TIMEOUT_MS"),
    logLevel: env.LOG_LEVEL || "info",
    sqliteSynchronous: sqliteSynchronous(env.SQLITE_SYNCHRONOUS),
    metricsToken,
    ...chainConfig(env),
    databasePoolSize: setting(env, "DATABASE_POOL_SIZE"),
    // Bounded both ways: rows are always deleted some day, and at most ten years are kept.
    callbackAttemptRetentionDays: setting(env, "CALLBACK_ATTEMPT_RETENTION_DAYS"),
    auditRetentionDays: setting(env, "AUDIT_RETENTION_DAYS"),
    rateCacheMs: setting(env, "RATE_CACHE_MS"),
    rateReadTimeoutMs: setting(env, "RATE_READ_TIMEOUT_MS"),
    cardProvider: cardProvider(env),
    screening: screeningConfig(env),
  };
}
