// Per-client-address limits (product §17): the operator API, and requests whose API key is unknown.
import { normalizeIP } from "@fastify/rate-limit";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Problem } from "./problem.ts";

/** Counts a request against the client address's window: true when the address is over its limit. */
export type AddressLimit = (request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;

declare module "fastify" {
  interface FastifyInstance {
    /** Per-address limit of the operator API (null when ADMIN_RATE_LIMIT_PER_MINUTE is 0). */
    adminAddressLimit: AddressLimit | null;
  }
}

/** IPv6 clients are counted per /64, as one host usually holds a whole /64 (@fastify/rate-limit's default). */
const IPV6_SUBNET = 64;

/**
 * The client address every per-address limit counts: the socket's peer, or the address a trusted
 * proxy (TRUST_PROXY) reported in X-Forwarded-For; an IPv6 client's /64.
 */
export function clientAddress(request: FastifyRequest): string {
  return normalizeIP(request.ip, IPV6_SUBNET);
}

/**
 * A fixed one-minute window per client address, kept by @fastify/rate-limit's bounded LRU store
 * (the plugin must be registered). The address is clientAddress: behind a reverse proxy that is not
 * in TRUST_PROXY every client shares the proxy's address (docs/operator-guide.md).
 */
export function addressLimit(app: Pick<FastifyInstance, "createRateLimit">, maxPerMinute: number): AddressLimit | null {
  if (maxPerMinute === 0) return null;
  const check = app.createRateLimit({
    max: maxPerMinute,
    timeWindow: 60_000,
    keyGenerator: clientAddress,
    // The plugin's global options (per API key, merchants only) must not leak into this limiter.
    allowList: [],
  });
  return async (request, reply) => {
    const result = await check(request);
    if (result.isAllowed || !result.isExceeded) return false;
    reply.header("retry-after", String(Math.max(1, result.ttlInSeconds)));
    return true;
  };
}

export const addressLimited = (what: string) =>
  new Problem("rate_limited", `Too many ${what} from this address; retry after the time in Retry-After.`);
