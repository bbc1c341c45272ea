// Verification of the callbacks the service sends (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature).
import { createHmac, timingSafeEqual } from "node:crypto";
import { CallbackVerificationError } from "./errors.ts";
import type { PaymentsEvent } from "./types.ts";

/** Header containers the SDK accepts: a fetch `Headers`, or Node's `IncomingHttpHeaders`-style record. */
export type CallbackHeaders = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export interface VerifyCallbackOptions {
  /** How far `webhook-timestamp` may be from now, either side (default 300 seconds). */
  toleranceSeconds?: number;
  /** The current time (for tests); default `Date.now()`. */
  now?: Date;
}

const DEFAULT_TOLERANCE_SECONDS = 300;
/** Standard Webhooks allows several signatures; more than this many is not a real header. */
const MAX_SIGNATURES = 16;

function header(headers: CallbackHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value.join(" ") : value;
}

/** The HMAC key of a `whsec_…` secret: the base64 text after the prefix, decoded. */
function secretKeyBytes(secret: string): Buffer {
  const encoded = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  const key = Buffer.from(encoded, "base64");
  if (key.length === 0) throw new TypeError("a callback secret must be whsec_ followed by base64");
  return key;
}

/**
 * Checks a callback's signature and timestamp and returns its event. `rawBody` must be the bytes
 * received, before any JSON parsing. Pass several secrets during a rotation: any one may match.
 * Throws `CallbackVerificationError` when the callback must not be trusted.
 */
export function verifyCallback(
  rawBody: string | Uint8Array,
  headers: CallbackHeaders,
  secretOrSecrets: string | readonly string[],
  options: VerifyCallbackOptions = {},
): PaymentsEvent {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  if (!id || !timestamp || !signatures) {
    throw new CallbackVerificationError(
      "missing_headers",
      "webhook-id, webhook-timestamp and webhook-signature are required",
    );
  }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (!/^[0-9]{1,12}$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > tolerance) {
    throw new CallbackVerificationError(
      "timestamp_out_of_tolerance",
      `webhook-timestamp is not within ${tolerance} seconds of now`,
    );
  }
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : Buffer.from(rawBody);
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), body]);
  const secrets = typeof secretOrSecrets === "string" ? [secretOrSecrets] : secretOrSecrets;
  if (secrets.length === 0) throw new TypeError("verifyCallback needs at least one secret");
  const expected = secrets.map((secret) => createHmac("sha256", secretKeyBytes(secret)).update(signed).digest());
  const presented = signatures
    .split(" ")
    .slice(0, MAX_SIGNATURES)
    .filter((entry) => entry.startsWith("v1,"))
    .map((entry) => Buffer.from(entry.slice(3), "base64"));
  const matches = presented.some((candidate) =>
    expected.some((digest) => candidate.length === digest.length && timingSafeEqual(candidate, digest)),
  );
  if (!matches) throw new CallbackVerificationError("invalid_signature", "no webhook-signature matches the secret(s)");
  let event: unknown;
  try {
    event = JSON.parse(body.toString("utf8"));
  } catch {
    throw new CallbackVerificationError("invalid_body", "the signed body is not JSON");
  }
  const e = event as Partial<PaymentsEvent> | null;
  if (typeof e !== "object" || e === null || typeof e.type !== "string" || e.id !== id || typeof e.data !== "object") {
    throw new CallbackVerificationError("invalid_body", "the signed body is not an event with this webhook-id");
  }
  return event as PaymentsEvent;
}
