// Service configuration from environment variables (product §2); a `.env` file may supply them.
import { isIP } from "node:net";
import { normalizeMnemonic } from "./chain/mnemonic.ts";
import { dialectOf } from "./store/dialect.ts";

export type ServiceMode = "sandbox" | "live";

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
  /** Failed operator tokens per minute per client address (counted in the store before each check); 0 turns it off. */
  adminTokenFailuresPerMinute: number;
  /**
   * TRUST_PROXY: the addresses or CIDR ranges of reverse proxies whose X-Forwarded-For is believed
   * (Fastify's trustProxy); empty (the default) believes none, and the client address is the socket's peer.
   */
  trustProxy: string[];
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
  /** CHAIN_PAYOUT_POLL_MS: pause of the live payout worker between batches that found nothing to do. */
  chainPayoutPollMs: number;
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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, "PORT", 8080, 0, 65535);
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
  const requestTimeoutMs = integer(env, "REQUEST_TIMEOUT_MS", 30_000, 1, 600_000);
  const headersTimeoutMs = integer(env, "HEADERS_TIMEOUT_MS", 10_000, 1, 600_000);
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
    rateLimitPerMinute: integer(env, "RATE_LIMIT_PER_MINUTE", 600, 0, 1_000_000),
    adminRateLimitPerMinute: integer(env, "ADMIN_RATE_LIMIT_PER_MINUTE", 600, 0, 1_000_000),
    unknownKeyRateLimitPerMinute: integer(env, "UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE", 60, 0, 1_000_000),
    adminTokenFailuresPerMinute: integer(env, "ADMIN_TOKEN_FAILURES_PER_MINUTE", 20, 0, 1_000_000),
    trustProxy: trustProxy(env.TRUST_PROXY),
    payStreamsPerAddress: integer(env, "PAY_STREAMS_PER_ADDRESS", 20, 1, 200),
    requestTimeoutMs,
    headersTimeoutMs,
    connectionTimeoutMs: integer(env, "CONNECTION_TIMEOUT_MS", 60_000, 1, 600_000),
    keepAliveTimeoutMs: integer(env, "KEEP_ALIVE_TIMEOUT_MS", 5_000, 1, 600_000),
    sandboxPayoutDelayMs: integer(env, "SANDBOX_PAYOUT_DELAY_MS", 5000, 0, 86_400_000),
    // Default: 24 hours in live mode, none in the sandbox; at most 30 days.
    withdrawalMethodCoolingOffMs:
      integer(env, "WITHDRAWAL_METHOD_COOLING_OFF_MINUTES", mode === "live" ? 1440 : 0, 0, 43_200) * 60_000,
    callbackTimeoutMs: integer(env, "CALLBACK_TIMEOUT_MS", 10_000, 1, 120_000),
    logLevel: env.LOG_LEVEL || "info",
    sqliteSynchronous: sqliteSynchronous(env.SQLITE_SYNCHRONOUS),
    metricsToken,
    walletMnemonic: walletMnemonic(env.WALLET_MNEMONIC),
    chainPayoutPollMs: integer(env, "CHAIN_PAYOUT_POLL_MS", 5000, 50, 600_000),
  };
}
