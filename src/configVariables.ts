// Every environment variable of the service, defined once: what it means, its default and, for whole numbers, its bounds; config.ts reads through it and the operator guide's table is generated from it.

/** A whole-number variable: config.ts reads it with these bounds and this fallback. */
export interface IntegerBounds {
  fallback: number;
  min: number;
  max: number;
}

export interface ConfigVariable {
  name: string;
  /** The operator guide's "meaning" column (Markdown). */
  meaning: string;
  /** The guide's "default" column (Markdown); derived from `integer` when it is set and this is absent. */
  default?: string;
  integer?: IntegerBounds;
}

const n = (fallback: number, min: number, max: number): IntegerBounds => ({ fallback, min, max });

/** In the order the operator guide lists them. */
export const CONFIG_VARIABLES: readonly ConfigVariable[] = [
  { name: "PORT", meaning: "HTTP port", integer: n(8080, 0, 65535) },
  { name: "HOST", meaning: "bind address", default: "`127.0.0.1`" },
  { name: "DATABASE_URL", meaning: "`sqlite:<path>` or `postgres://…`", default: "`sqlite:./data/payments.db`" },
  {
    name: "SERVICE_MODE",
    meaning: "`sandbox` (simulated money, sandbox API, demo merchant on a new store) or `live`",
    default: "`sandbox`",
  },
  {
    name: "ADMIN_TOKEN",
    meaning: "bearer token of the operator API (and of `/metrics`): 16–512 printable ASCII characters without spaces",
    default: "generated on the first start of a store, printed once, only its hash kept",
  },
  {
    name: "PUBLIC_BASE_URL",
    meaning: "base of `invoice_url`, icon URLs and dashboard links; `https://…` also makes dashboard cookies `Secure`",
    default: "`http://HOST:PORT`",
  },
  {
    name: "SECRET_ENCRYPTION_KEY",
    meaning: "32 bytes (64 hex characters, or base64) sealing secrets at rest with AES-256-GCM",
    default: "SQLite: generated into `secret.key` beside the database; PostgreSQL: required",
  },
  {
    name: "DATABASE_POOL_SIZE",
    meaning:
      "PostgreSQL connections per process, besides its one listening connection: N processes need N × (`DATABASE_POOL_SIZE` + 1) below the server's `max_connections` ([section 2](#2-stores-and-several-processes-on-postgresql))",
    integer: n(10, 1, 1000),
  },
  {
    name: "RATE_LIMIT_PER_MINUTE",
    meaning: "requests per minute per API key, per process; `0` off",
    integer: n(600, 0, 1_000_000),
  },
  {
    name: "ADMIN_RATE_LIMIT_PER_MINUTE",
    meaning:
      "operator API requests per minute per client address, per process (counted before the token check); `0` off",
    integer: n(600, 0, 1_000_000),
  },
  {
    name: "UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE",
    meaning:
      "requests with an unknown API key per minute per client address, counted in the database (all processes together); over it 429, while a valid key keeps working from that address; `0` off",
    integer: n(60, 0, 1_000_000),
  },
  {
    name: "ADMIN_TOKEN_FAILURES_PER_MINUTE",
    meaning:
      "failed operator tokens per minute per client address, counted in the database before each token is checked (all processes together); over it 429, the right token included, until the minute ends; apart from `ADMIN_RATE_LIMIT_PER_MINUTE`; `0` off (not recommended)",
    integer: n(20, 0, 1_000_000),
  },
  {
    name: "PAYER_RATE_LIMIT_PER_MINUTE",
    meaning:
      "requests per minute per client address to the routes a payer uses without credentials: `/pay/{id}` and every action of it (status, events, QR code, sandbox buttons, card checkout), `/l/{id}` and `/refund/{token}`, GET and POST; one window per address across all of them, per process; over it 429 `rate_limited` with `Retry-After` (a page for a browser); `0` off ([section 4b](#4b-limits-of-the-routes-without-credentials))",
    integer: n(120, 0, 1_000_000),
  },
  {
    name: "WEBHOOK_RATE_LIMIT_PER_MINUTE",
    meaning:
      "requests per minute per client address to the card provider's webhook (`/webhooks/stripe`), a window of its own, per process; `0` off",
    integer: n(600, 0, 1_000_000),
  },
  {
    name: "TRUST_PROXY",
    meaning:
      "the addresses or CIDR ranges of your reverse proxies, comma-separated (`127.0.0.1,10.0.0.0/8,fd00::/8`), whose `X-Forwarded-For` is believed (Fastify's `trustProxy`); every per-address limit and the audit log use the address found that way. Without it the client address is the connection's peer and a forged `X-Forwarded-For` changes nothing",
    default: "none",
  },
  {
    name: "PAY_STREAMS_PER_ADDRESS",
    meaning:
      "payer's page live streams (`/pay/{id}/events`) one client address (as `TRUST_PROXY` finds it; an IPv6 client's /64) may hold open, per process, so one party cannot hold every slot; beyond it 429 `too_many_streams` and the page polls",
    integer: n(20, 1, 200),
  },
  {
    name: "LINK_INVOICES_PER_ADDRESS_PER_MINUTE",
    meaning:
      "invoices one client address may make through payment links per minute, counted in the database before each (all processes together); over it 429; `0` off",
    integer: n(10, 0, 1_000_000),
  },
  {
    name: "LINK_INVOICES_PER_LINK_PER_MINUTE",
    meaning: "invoices one payment link may make per minute, counted the same way; `0` off",
    integer: n(120, 0, 1_000_000),
  },
  {
    name: "LINK_OPEN_INVOICES",
    meaning:
      "open unpaid invoices (`pending`, not yet due) one payment link may have, counted in the creating transaction under the link's row lock; beyond it 429 with `Retry-After`",
    integer: n(500, 1, 1_000_000),
  },
  {
    name: "REQUEST_TIMEOUT_MS",
    meaning: "bound of a whole request, body included (408 after it)",
    integer: n(30_000, 1, 600_000),
  },
  {
    name: "HEADERS_TIMEOUT_MS",
    meaning: "bound of the request line and headers; at most `REQUEST_TIMEOUT_MS`",
    integer: n(10_000, 1, 600_000),
  },
  {
    name: "CONNECTION_TIMEOUT_MS",
    meaning: "an inactive connection is closed after this",
    integer: n(60_000, 1, 600_000),
  },
  {
    name: "KEEP_ALIVE_TIMEOUT_MS",
    meaning: "an idle keep-alive connection is closed after this",
    integer: n(5_000, 1, 600_000),
  },
  {
    name: "SANDBOX_PAYOUT_DELAY_MS",
    meaning: "sandbox payouts settle as `completed` by themselves after this; `0` off",
    integer: n(5000, 0, 86_400_000),
  },
  {
    name: "WITHDRAWAL_METHOD_COOLING_OFF_MINUTES",
    meaning:
      "how long a withdrawal method added in the dashboard waits before it takes withdrawals (0–43200, product §14)",
    default: "`1440` in live mode, `0` in the sandbox",
  },
  { name: "CALLBACK_TIMEOUT_MS", meaning: "bound of one callback delivery attempt", integer: n(10_000, 1, 120_000) },
  {
    name: "CALLBACK_ATTEMPT_RETENTION_DAYS",
    meaning: "callback attempts older than this are deleted",
    integer: n(90, 1, 3650),
  },
  {
    name: "AUDIT_RETENTION_DAYS",
    meaning: "dashboard audit rows older than this are deleted",
    integer: n(365, 1, 3650),
  },
  {
    name: "RATE_CACHE_MS",
    meaning: "how long a rate feed's round is shared between requests, per process ([rates.md](rates.md))",
    integer: n(10_000, 0, 600_000),
  },
  {
    name: "RATE_READ_TIMEOUT_MS",
    meaning: "bound of one rate feed read; a slower node makes quotes in that currency 503 `rate_unavailable`",
    integer: n(5000, 100, 60_000),
  },
  {
    name: "LOG_LEVEL",
    meaning: "pino level (`fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`)",
    default: "`info`",
  },
  {
    name: "METRICS_TOKEN",
    meaning: "a bearer token for `GET /metrics` only (16–512 printable ASCII, no spaces); the admin token works too",
    default: "none",
  },
  {
    name: "SQLITE_SYNCHRONOUS",
    meaning: "`FULL`, or `NORMAL` (no fsync: only to measure what durability costs, never in production)",
    default: "`FULL`",
  },
  {
    name: "WALLET_MNEMONIC",
    meaning:
      "live mode's EVM rail: the hot wallet's BIP-39 phrase (12–24 words); never with `SIGNER_URL` ([section 10](#10-going-live))",
    default: "none: no crypto in live mode",
  },
  {
    name: "SIGNER_URL",
    meaning:
      "a remote signer of the hot wallet instead of `WALLET_MNEMONIC` (an http(s) URL; it may hold credentials, so it is never logged) ([signer.md](signer.md))",
    default: "none",
  },
  {
    name: "SIGNER_URL_<NETWORK>",
    meaning:
      "a network's own signer, e.g. `SIGNER_URL_BASE_SEPOLIA` for `base-sepolia` (the name upper-cased, other than letters and digits as `_`): web3signer and KMS signers are bound to one chain; with `SIGNER_URL`, the signer of the other networks",
    default: "`SIGNER_URL`",
  },
  {
    name: "SIGNER_ADDRESS",
    meaning: "the hot wallet's address at the signer: one for every network's signer; with `SIGNER_URL`",
    default: "none",
  },
  {
    name: "SIGNER_TIMEOUT_MS",
    meaning: "bound of one signing request; with `SIGNER_URL`",
    integer: n(5000, 100, 60_000),
  },
  {
    name: "CHAIN_PAYOUT_POLL_MS",
    meaning: "pause of the live payout worker between batches that found nothing to do",
    integer: n(5000, 50, 600_000),
  },
  {
    name: "FLUSH_BATCH_SIZE",
    meaning: "a flush goes once this many forwarder deposits wait on a network ([forwarders.md](forwarders.md))",
    integer: n(20, 1, 100),
  },
  {
    name: "FLUSH_MAX_WAIT_MS",
    meaning: "or once the oldest waiting deposit has waited this long",
    integer: n(600_000, 1000, 86_400_000),
  },
  {
    name: "CARD_PROVIDER",
    meaning: "`stripe` takes fiat by card in live mode, with the two keys below ([card-payments.md](card-payments.md))",
    default: "none: no fiat in live mode",
  },
  { name: "STRIPE_SECRET_KEY", meaning: "the Stripe secret or restricted key (`sk_…`, `rk_…`)", default: "none" },
  { name: "STRIPE_WEBHOOK_SECRET", meaning: "the webhook endpoint's signing secret (`whsec_…`)", default: "none" },
  {
    name: "STRIPE_API_BASE",
    meaning: "Stripe's API origin (tests point it at a local double)",
    default: "`https://api.stripe.com`",
  },
  {
    name: "SCREENING_LIST",
    meaning: "path of a screening list file (plain addresses or OFAC SDN CSV) ([screening.md](screening.md))",
    default: "none",
  },
  {
    name: "SCREENING_PROVIDER_URL",
    meaning: "a Chainalysis-shaped screening provider's base URL; with `SCREENING_PROVIDER_KEY`",
    default: "none",
  },
  { name: "SCREENING_PROVIDER_KEY", meaning: "the provider's API key", default: "none" },
  {
    name: "SCREENING_PROVIDER_TIMEOUT_MS",
    meaning: "bound of one provider call",
    integer: n(5000, 100, 60_000),
  },
  {
    name: "SCREENING_CACHE_SECONDS",
    meaning: "how long a provider's answer on an address is reused",
    integer: n(3600, 0, 604_800),
  },
  {
    name: "SCREENING_RETRY_MS",
    meaning: "delay before an unscreened payment is tried again (doubling, at most an hour)",
    integer: n(30_000, 1, 3_600_000),
  },
  {
    name: "SCREENING_MAX_ATTEMPTS",
    meaning: "attempts without an answer before the payment goes to the operator (`aml_check`)",
    integer: n(6, 1, 50),
  },
];

export function configVariable(name: string): ConfigVariable {
  const found = CONFIG_VARIABLES.find((v) => v.name === name);
  if (found === undefined) throw new Error(`${name} is not a defined configuration variable`);
  return found;
}

/** The operator guide's table of every variable, as Markdown (npm run generate:config-docs writes it). */
export function configVariablesTable(): string {
  const rows = CONFIG_VARIABLES.map((v) => {
    const range = v.integer === undefined ? "" : ` (${v.integer.min}–${v.integer.max})`;
    const fallback = v.default ?? `\`${v.integer?.fallback}\``;
    return `| \`${v.name}\` | ${v.meaning}${range} | ${fallback} |`;
  });
  return ["| variable | meaning | default |", "| - | - | - |", ...rows].join("\n");
}
