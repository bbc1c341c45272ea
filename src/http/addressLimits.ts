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
    /** Per-address limit of unknown API keys (null when UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE is 0). */
    unknownKeyAddressLimit: AddressLimit | null;
  }
}

/** IPv6 clients are counted per /64, as one host usually holds a whole /64 (@fastify/rate-limit's default). */
const IPV6_SUBNET = 64;

/**
 * A fixed one-minute window per client address, kept by @fastify/rate-limit's bounded LRU store
 * (the plugin must be registered). The address is the socket's peer: behind a reverse proxy every
 * client shares the proxy's address, so limit there too (docs/operator-api.md).
 */
export function addressLimit(app: Pick<FastifyInstance, "createRateLimit">, maxPerMinute: number): AddressLimit | null {
  if (maxPerMinute === 0) return null;
  const check = app.createRateLimit({
    max: maxPerMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => normalizeIP(request.ip, IPV6_SUBNET),
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
