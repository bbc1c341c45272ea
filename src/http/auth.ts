// Authentication hooks: merchant API keys (x-api-key) and the operator's bearer token.
import type {
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestAsyncHookHandler,
  onRequestHookHandler,
} from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { type Reservation, release, reserve } from "../app/throttles.ts";
import { addressAllowed, scopeAllows } from "../domain/apiKeyScopes.ts";
import { assert } from "../domain/result.ts";
import { type ApiKeyOwner, apiKeyOwner, touchApiKey } from "../store/merchants.ts";
import { tokensEqual } from "../store/secrets.ts";
import { nowIso } from "../store/store.ts";
import { addressLimited, clientAddress } from "./addressLimits.ts";
import { singleHeader } from "./headers.ts";
import { Problem } from "./problem.ts";
import { type LocalThrottle, setRetryAfter } from "./throttles.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** The API key's owner, set by the merchant authentication hook. */
    apiKeyOwner?: ApiKeyOwner;
  }
}

/** How often a key's last use is written: the dashboard shows it to the minute, and each write costs a commit. */
export const API_KEY_USE_RESOLUTION_MS = 60_000;
const LAST_USE_ENTRIES = 10_000;

/** When each key's last use was written, per service (every merchantAuth hook of one app shares it). */
const lastUseWrites = new WeakMap<ServiceContext, Map<string, number>>();

/**
 * Records that a key was used, and from which address, at most once a minute per key and process,
 * off the request's path: a failed write loses one last use, never the request.
 */
function noteKeyUse(ctx: ServiceContext, apiKeyId: string, from: string): void {
  let written = lastUseWrites.get(ctx);
  if (!written) {
    written = new Map();
    lastUseWrites.set(ctx, written);
  }
  const now = Date.now();
  const last = written.get(apiKeyId);
  if (last !== undefined && now - last < API_KEY_USE_RESOLUTION_MS) return;
  if (written.size >= LAST_USE_ENTRIES) written.clear();
  written.set(apiKeyId, now);
  const entries = written;
  ctx.store
    .transaction((tx) => touchApiKey(tx, apiKeyId, nowIso(), from.replace(/^::ffff:(?=\d+\.)/i, "")))
    .catch(() => entries.delete(apiKeyId));
}

/**
 * A scoped key's bounds (product §31), before any work and before the body is read: the route's
 * scope (ROUTE_SCOPES), then the client address as TRUST_PROXY resolves it. A full key passes at
 * the cost of two null checks.
 */
function refusal(request: FastifyRequest, owner: ApiKeyOwner): Problem | null {
  if (owner.scopes !== null && !scopeAllows(owner.scopes, request.method, request.routeOptions.url ?? "")) {
    return new Problem("insufficient_scope", "This API key's scopes do not include this operation.");
  }
  if (!addressAllowed(owner.allowedRanges, request.ip)) {
    return new Problem("address_not_allowed", "This API key may not be used from this client address.");
  }
  return null;
}

/** Admits the request with its key's owner, or refuses it outside the key's scopes or ranges. */
function admit(ctx: ServiceContext, request: FastifyRequest, owner: ApiKeyOwner, done: HookHandlerDoneFunction): void {
  const refused = refusal(request, owner);
  if (refused) {
    done(refused);
    return;
  }
  request.apiKeyOwner = owner;
  noteKeyUse(ctx, owner.apiKeyId, request.ip);
  done();
}

export function merchantAuth(ctx: ServiceContext): onRequestHookHandler {
  // Callback style: with the key cached, the hook completes without a promise or a tick.
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const apiKey = singleHeader(request, "x-api-key");
    if (apiKey === undefined || apiKey === "") {
      done(new Problem("unauthorized", "Send your API key in the x-api-key header."));
      return;
    }
    // An unknown key counts against the client address, in the store (so across processes); over
    // its limit, 429 instead of 401. A valid key is never counted: it keeps working from that address.
    const refuseUnknown = () => {
      const unknown = new Problem("invalid_api_key", "The API key is unknown or revoked.");
      const limit = ctx.config.unknownKeyRateLimitPerMinute;
      if (limit === 0) {
        done(unknown);
        return;
      }
      const rule = { subject: `unknown_key:address:${clientAddress(request)}`, limit, windowMs: 60_000 };
      reserve(ctx.store, [rule]).then(
        (reservation) => {
          if (reservation.ok) return done(unknown);
          setRetryAfter(reply, reservation.retryAfterSeconds);
          done(addressLimited("requests with unknown API keys"));
        },
        (error: Error) => done(error),
      );
    };
    // Keys are short and printable; anything else cannot be one and needs no lookup.
    if (apiKey.length > 200) {
      refuseUnknown();
      return;
    }
    const found = apiKeyOwner(ctx.store, apiKey);
    if (!(found instanceof Promise)) {
      admit(ctx, request, found, done);
      return;
    }
    found.then(
      (owner) => (owner ? admit(ctx, request, owner, done) : refuseUnknown()),
      (error: Error) => done(error),
    );
  };
}

/** The authenticated merchant of a route behind merchantAuth. */
export function ownerOf(request: FastifyRequest): ApiKeyOwner {
  const owner = request.apiKeyOwner;
  assert(owner, "route is behind merchantAuth");
  return owner;
}

/**
 * Reserves one operator-token check against the client address (ADMIN_TOKEN_FAILURES_PER_MINUTE, in
 * the store) before the token is compared, or refuses with 429: parallel guesses evaluate at most
 * that many tokens per minute and address, and over the limit even the right token answers 429
 * until the minute ends. A right token gives the reservation back (`tokenAccepted`), so only failed
 * tokens stay counted. Every place that compares the operator token calls it (/admin/v1, /metrics).
 */
export async function reserveTokenCheck(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Reservation> {
  const reservation = await reserve(ctx.store, [tokenRule(ctx, request)]);
  if (!reservation.ok) {
    setRetryAfter(reply, reservation.retryAfterSeconds);
    throw addressLimited("failed operator tokens");
  }
  return reservation;
}

function tokenRule(ctx: ServiceContext, request: FastifyRequest) {
  const limit = ctx.config.adminTokenFailuresPerMinute;
  return { subject: `admin_token:address:${clientAddress(request)}`, limit, windowMs: 60_000 };
}

export async function tokenAccepted(ctx: ServiceContext, reservation: Reservation): Promise<void> {
  if (reservation.ok && reservation.reserved.length > 0) await ctx.store.transaction((tx) => release(tx, reservation));
}

/**
 * The operator token's check on /metrics, which must answer while the store is down: counted in the
 * store as everywhere, or, when the store cannot count, in this process (the same limit). Answers
 * how to give the attempt back once the token proved right.
 */
export async function metricsTokenCheck(
  ctx: ServiceContext,
  local: LocalThrottle,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<() => Promise<void>> {
  const rule = tokenRule(ctx, request);
  let reservation: Reservation;
  try {
    reservation = await reserve(ctx.store, [rule]);
  } catch {
    const wait = local.reserve(rule);
    if (wait === null) return async () => local.release(rule);
    reservation = { ok: false, retryAfterSeconds: wait };
  }
  if (!reservation.ok) {
    setRetryAfter(reply, reservation.retryAfterSeconds);
    throw addressLimited("failed operator tokens");
  }
  return () => tokenAccepted(ctx, reservation).catch(() => undefined);
}

export function adminAuth(ctx: ServiceContext): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const reservation = await reserveTokenCheck(ctx, request, reply);
    const header = singleHeader(request, "authorization") ?? "";
    const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(header);
    if (!match?.[1] || !tokensEqual(match[1], ctx.adminTokenHash)) {
      throw new Problem("invalid_admin_token", "Send the operator token as authorization: Bearer <ADMIN_TOKEN>.");
    }
    await tokenAccepted(ctx, reservation);
  };
}
