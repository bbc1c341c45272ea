// Request signing of the three signed operations, exactly as the interface states it (RFC 8785 body, HMAC-SHA256).
import { createHmac } from "node:crypto";
import canonicalize from "canonicalize";

export interface SignatureInput {
  /** The exact route with /public/v1, without host or query string. */
  path: string;
  /** Unix time in seconds, as sent in x-service-timestamp. */
  timestamp: string;
  /** The request id exactly as sent in x-service-request-id. */
  requestId: string;
  /** The JSON body (any value `JSON.stringify` accepts). */
  body: unknown;
  /** The secret key, used as UTF-8 text (never hex-decoded). */
  secretKey: string;
}

/** RFC 8785 canonical JSON of a body. Throws on values JSON cannot hold (undefined, functions, non-finite numbers). */
export function canonicalBody(body: unknown): string {
  const canonical = canonicalize(body);
  if (canonical === undefined) throw new TypeError("the body has no JSON form");
  return canonical;
}

/** The value of x-service-request-signature: `v1=` + lowercase hex HMAC-SHA256 of the signed message. */
export function signRequest(input: SignatureInput): string {
  const message = ["POST", input.path, input.timestamp, input.requestId, canonicalBody(input.body)].join("\n");
  return `v1=${createHmac("sha256", Buffer.from(input.secretKey, "utf8")).update(message, "utf8").digest("hex")}`;
}
