// Where a callback may go: checks a URL at invoice creation and resolves, checks and pins its address at delivery.
import { lookup as dnsLookup } from "node:dns/promises";
import { type CallbackUrlError, checkAddresses, literalAddress, parseCallbackUrl } from "../domain/callbackUrl.ts";
import { err, ok, type Result } from "../domain/result.ts";
import type { ServiceMode } from "../domain/serviceMode.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has; injectable so tests can play any DNS answer. */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolveHost: ResolveHost = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** A DNS answer slower than this is treated as no answer. */
export const RESOLVE_TIMEOUT_MS = 5000;

async function resolveWithin(
  resolve: ResolveHost,
  hostname: string,
  timeoutMs: number,
): Promise<Result<ResolvedAddress[], "unresolved">> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Result<ResolvedAddress[], "unresolved">>((done) => {
    timer = setTimeout(() => done(err("unresolved", `resolving ${hostname} timed out`)), timeoutMs);
  });
  const answer = resolve(hostname).then(
    (addresses): Result<ResolvedAddress[], "unresolved"> =>
      addresses.length > 0 ? ok(addresses) : err("unresolved", `${hostname} has no address`),
    (error: unknown) =>
      err("unresolved", `resolving ${hostname} failed: ${(error as NodeJS.ErrnoException).code ?? String(error)}`),
  );
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface CheckCallbackUrlOptions {
  /** Defaults to the system resolver (node:dns lookup, as connections use). */
  lookup?: ResolveHost;
  timeoutMs?: number;
}

/**
 * The check CreateInvoice runs on `callbackUrl`: an absolute http(s) URL whose host does not
 * resolve to a forbidden address (every address counts). A host that does not resolve now is
 * accepted: nothing can be reached through it, and every delivery resolves and checks it again.
 * A refusal's `error` is the problem code (400) and `detail` says why.
 */
export async function checkCallbackUrl(
  url: string,
  mode: ServiceMode,
  options: CheckCallbackUrlOptions = {},
): Promise<Result<URL, CallbackUrlError>> {
  const parsed = parseCallbackUrl(url);
  if (!parsed.ok) return parsed;
  const literal = literalAddress(parsed.value);
  if (literal !== null) {
    const allowed = checkAddresses(literal, [literal], mode);
    return allowed.ok ? parsed : allowed;
  }
  const resolved = await resolveWithin(
    options.lookup ?? systemResolveHost,
    parsed.value.hostname,
    options.timeoutMs ?? RESOLVE_TIMEOUT_MS,
  );
  if (!resolved.ok) return parsed;
  const allowed = checkAddresses(
    parsed.value.hostname,
    resolved.value.map((a) => a.address),
    mode,
  );
  return allowed.ok ? parsed : allowed;
}

export interface CallbackDestination {
  url: URL;
  /** The checked address the request connects to, whatever the host resolves to a moment later. */
  address: ResolvedAddress;
}

export type DestinationError = CallbackUrlError | "callback_host_unresolved";

/**
 * The delivery-time check: resolve the host, refuse it if any address is forbidden, and pin the
 * first address for the connection, so a DNS answer that changes between the check and the
 * connection (DNS rebinding) cannot redirect the request.
 */
export async function resolveCallbackDestination(
  url: string,
  mode: ServiceMode,
  resolve: ResolveHost,
  timeoutMs: number,
): Promise<Result<CallbackDestination, DestinationError>> {
  const parsed = parseCallbackUrl(url);
  if (!parsed.ok) return parsed;
  const literal = literalAddress(parsed.value);
  const addresses: ResolvedAddress[] = [];
  if (literal !== null) {
    addresses.push({ address: literal, family: literal.includes(":") ? 6 : 4 });
  } else {
    const resolved = await resolveWithin(resolve, parsed.value.hostname, timeoutMs);
    if (!resolved.ok) return err("callback_host_unresolved", resolved.detail);
    addresses.push(...resolved.value);
  }
  const allowed = checkAddresses(
    parsed.value.hostname,
    addresses.map((a) => a.address),
    mode,
  );
  if (!allowed.ok) return allowed;
  return ok({ url: parsed.value, address: addresses[0]! });
}
