// Standard Webhooks signatures of callbacks: HMAC-SHA256 over "id.timestamp.body", several during a secret rotation.
import { createHmac } from "node:crypto";
import { assert } from "./result.ts";

export const CALLBACK_SECRET_PREFIX = "whsec_";

/** After a rotation both the new and the previous secret sign, so merchants can switch over without losing events. */
export const CALLBACK_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** The HMAC key of a `whsec_` secret: the base64 text after the prefix, decoded (as Standard Webhooks libraries do). */
export function callbackSigningKey(secret: string): Buffer {
  const encoded = secret.startsWith(CALLBACK_SECRET_PREFIX) ? secret.slice(CALLBACK_SECRET_PREFIX.length) : secret;
  assert(/^[A-Za-z0-9+/]+={0,2}$/.test(encoded), "a callback secret is base64 after its whsec_ prefix");
  const key = Buffer.from(encoded, "base64");
  assert(key.length > 0, "a callback secret is not empty");
  return key;
}

/** One `v1,<base64>` signature of a message. `timestamp` is in Unix seconds, as sent in `webhook-timestamp`. */
export function signCallback(secret: string, id: string, timestamp: number, body: string): string {
  assert(Number.isInteger(timestamp), "webhook-timestamp is whole seconds");
  const mac = createHmac("sha256", callbackSigningKey(secret)).update(`${id}.${timestamp}.${body}`, "utf8");
  return `v1,${mac.digest("base64")}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated, the current secret first. */
export function callbackSignatureHeader(
  secrets: readonly string[],
  id: string,
  timestamp: number,
  body: string,
): string {
  assert(secrets.length > 0, "at least one secret signs");
  return secrets.map((secret) => signCallback(secret, id, timestamp, body)).join(" ");
}

export interface MerchantCallbackSecrets {
  current: string;
  previous: string | null;
  /** ISO time of the last rotation, or null if the secret was never rotated. */
  rotatedAt: string | null;
}

/** The secrets that sign at `now`: the current one, and the previous one during the overlap after a rotation. */
export function signingSecrets(secrets: MerchantCallbackSecrets, now: Date): string[] {
  if (secrets.previous === null || secrets.rotatedAt === null) return [secrets.current];
  const sinceRotation = now.getTime() - Date.parse(secrets.rotatedAt);
  return sinceRotation < CALLBACK_ROTATION_OVERLAP_MS ? [secrets.current, secrets.previous] : [secrets.current];
}
