// Scoped API keys (product §31): the scopes, which scope each merchant route needs, and the checks of a key's scopes and address ranges.
import { type AddressRange, parseAddress } from "./addressRanges.ts";

export const API_KEY_SCOPES = [
  "invoices:read",
  "invoices:write",
  "payment_links:write",
  "refunds:write",
  "withdrawals:write",
  "subscriptions:write",
  "deposit_addresses:write",
  "read",
] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** Scopes with no route yet (none: every scope names at least one route). */
export const SCOPES_WITHOUT_ROUTES: readonly ApiKeyScope[] = [];

export function isApiKeyScope(value: string): value is ApiKeyScope {
  return (API_KEY_SCOPES as readonly string[]).includes(value);
}

/** What a route takes: "public" needs no key; otherwise the scopes any one of which lets a key in. */
export type RouteAccess = "public" | readonly ApiKeyScope[];

const READ: readonly ApiKeyScope[] = ["read"];
const INVOICE_READ: readonly ApiKeyScope[] = ["invoices:read", "read"];
const only = (scope: ApiKeyScope): readonly ApiKeyScope[] => [scope];

/**
 * Every merchant route (method and Fastify route pattern under /public/v1, /x402/v1, /sandbox/v1)
 * and what it takes; a project test holds it to the routes the app registers. Every GET takes
 * `read`. x402 is money in, as an invoice is: its three routes (the GET too, so that an x402 key
 * needs one scope) take `invoices:write`. A sandbox route takes the write scope of what it
 * simulates: a payment or an AML verdict of an invoice, a payout's outcome (of a withdrawal or a
 * refund), a subscription's test clock (docs/api-keys.md).
 */
export const ROUTE_SCOPES: Readonly<Record<string, RouteAccess>> = {
  "GET /public/v1/version": "public",
  "GET /public/v1/currencies": "public",
  "GET /public/v1/countries": "public",
  "GET /public/v1/me": READ,
  "POST /public/v1/invoices/create": only("invoices:write"),
  "POST /public/v1/invoices/estimateFees": only("invoices:write"),
  "GET /public/v1/invoices": INVOICE_READ,
  "GET /public/v1/invoices/:id": INVOICE_READ,
  "GET /public/v1/invoices/byOrder/:order_no": INVOICE_READ,
  "GET /public/v1/invoices/:id/quote": INVOICE_READ,
  "GET /public/v1/invoices/:id/disputes": INVOICE_READ,
  "POST /public/v1/withdrawals/create": only("withdrawals:write"),
  "GET /public/v1/withdrawals": READ,
  "GET /public/v1/withdrawals/:id": READ,
  "POST /public/v1/refunds/refundCrypto": only("refunds:write"),
  "POST /public/v1/refunds/refundFiat": only("refunds:write"),
  "POST /public/v1/refunds/create": only("refunds:write"),
  "GET /public/v1/refunds": READ,
  "GET /public/v1/refunds/:id": READ,
  "GET /public/v1/events": READ,
  "GET /public/v1/balances": READ,
  "POST /public/v1/payment-links": only("payment_links:write"),
  "PATCH /public/v1/payment-links/:id": only("payment_links:write"),
  "GET /public/v1/payment-links": READ,
  "GET /public/v1/payment-links/:id": READ,
  "GET /public/v1/payment-links/:id/invoices": READ,
  "POST /public/v1/deposit-addresses": only("deposit_addresses:write"),
  "PATCH /public/v1/deposit-addresses/:id": only("deposit_addresses:write"),
  "GET /public/v1/deposit-addresses": READ,
  "GET /public/v1/deposit-addresses/:id": READ,
  "GET /public/v1/deposits": READ,
  "GET /public/v1/deposits/:id": READ,
  "POST /public/v1/deposits/:id/resolve": only("deposit_addresses:write"),
  "POST /public/v1/plans": only("subscriptions:write"),
  "PATCH /public/v1/plans/:id": only("subscriptions:write"),
  "GET /public/v1/plans": READ,
  "GET /public/v1/plans/:id": READ,
  "POST /public/v1/subscriptions": only("subscriptions:write"),
  "POST /public/v1/subscriptions/:id/cancel": only("subscriptions:write"),
  "POST /public/v1/subscriptions/:id/change-plan": only("subscriptions:write"),
  "GET /public/v1/subscriptions": READ,
  "GET /public/v1/subscriptions/:id": READ,
  "GET /x402/v1/supported": ["invoices:write", "read"],
  "POST /x402/v1/verify": only("invoices:write"),
  "POST /x402/v1/settle": only("invoices:write"),
  "POST /sandbox/v1/invoices/:id/payments": only("invoices:write"),
  "POST /sandbox/v1/invoices/:id/aml": only("invoices:write"),
  "POST /sandbox/v1/payouts/:requestId/outcome": ["withdrawals:write", "refunds:write"],
  "POST /sandbox/v1/subscriptions/:id/advance": only("subscriptions:write"),
};

/** The table's key of a request: HEAD is answered by its GET route. */
export function routeKey(method: string, pattern: string): string {
  return `${method === "HEAD" ? "GET" : method} ${pattern}`;
}

/**
 * Whether a key with `scopes` (null: a full key) may call the route; a route missing from the
 * table lets no scoped key in (the project test keeps the table complete).
 */
export function scopeAllows(scopes: readonly ApiKeyScope[] | null, method: string, pattern: string): boolean {
  if (scopes === null) return true;
  const access = ROUTE_SCOPES[routeKey(method, pattern)];
  if (access === undefined) return false;
  return access === "public" || access.some((scope) => scopes.includes(scope));
}

/** Whether the client address is in one of the ranges (null: from anywhere). An unreadable address is in none. */
export function addressAllowed(ranges: readonly AddressRange[] | null, clientAddress: string): boolean {
  if (ranges === null) return true;
  const address = parseAddress(clientAddress);
  if (address === null) return false;
  return ranges.some((range) => (address & range.mask) === range.network);
}
