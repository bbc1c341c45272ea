// Request signing of the signed operations (interface "Request signing"): header formats, the signed message, HMAC-SHA256.
import { createHmac, hash, timingSafeEqual } from "node:crypto";
import canonicalize from "canonicalize";
import { err, ok, type Result } from "./result.ts";

/** "Within five minutes of the server time", either side. */
export const TIMESTAMP_TOLERANCE_SECONDS = 300;

/** Unix seconds as a plain decimal: no sign, no fraction, no leading zeros; 12 digits is year 33658, plenty. */
const TIMESTAMP = /^(0|[1-9][0-9]{0,11})$/;
/** A UUID in 8-4-4-4-12 form, any version, either case. */
const REQUEST_ID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** `v1=` and exactly 64 lowercase hex characters; upper case is a different string, so it is refused. */
const SIGNATURE = /^v1=([0-9a-f]{64})$/;

/** Reads x-service-timestamp and checks it lies within the tolerance of `nowMs`. Milliseconds are far in the future, so they fail. */
export function checkTimestamp(header: string | undefined, nowMs: number): Result<number, "invalid_timestamp"> {
  if (header === undefined || !TIMESTAMP.test(header)) {
    return err("invalid_timestamp", "x-service-timestamp must be the current Unix time in whole seconds.");
  }
  const seconds = Number(header);
  // Whole seconds on both sides: a client that truncates its clock is not refused at the edge.
  if (Math.abs(Math.floor(nowMs / 1000) - seconds) > TIMESTAMP_TOLERANCE_SECONDS) {
    return err("invalid_timestamp", "x-service-timestamp is more than five minutes away from the server time.");
  }
  return ok(seconds);
}

/**
 * Reads x-service-request-id. The answer is the key the service stores it under: request ids are
 * matched case-insensitively, so the key is the lowercase form.
 */
export function checkRequestId(header: string | undefined): Result<string, "invalid_request_id"> {
  if (header === undefined || !REQUEST_ID.test(header)) {
    return err("invalid_request_id", "x-service-request-id must be a UUID in 8-4-4-4-12 form.");
  }
  return ok(header.toLowerCase());
}

/** Reads x-service-request-signature into the 32 bytes of the HMAC it claims. */
export function checkSignatureFormat(header: string | undefined): Result<Buffer, "invalid_signature_format"> {
  const match = header === undefined ? null : SIGNATURE.exec(header);
  if (!match?.[1]) {
    return err(
      "invalid_signature_format",
      "x-service-request-signature must be v1= followed by 64 lowercase hex characters.",
    );
  }
  return ok(Buffer.from(match[1], "hex"));
}

/**
 * RFC 8785 canonical form of a parsed body. I-JSON values only: a lone surrogate (or a number
 * out of range, which the body parser already refuses) has no canonical form.
 */
export function canonicalJson(value: unknown): Result<string, "malformed_json"> {
  if (value === undefined) return err("malformed_json", "A signed operation needs a JSON body.");
  try {
    const text = canonicalize(value);
    if (text === undefined) return err("malformed_json", "The body has no JSON canonical form.");
    return ok(text);
  } catch {
    return err("malformed_json", "The body is not I-JSON (RFC 7493): it has no RFC 8785 canonical form.");
  }
}

export interface SignedParts {
  /** The exact route, including /public/v1, without host or query. */
  path: string;
  /** The header values exactly as sent. */
  timestamp: string;
  requestId: string;
  canonicalBody: string;
}

/** `POST` LF path LF timestamp LF request id LF canonical body. */
export function signingMessage(parts: SignedParts): string {
  return `POST\n${parts.path}\n${parts.timestamp}\n${parts.requestId}\n${parts.canonicalBody}`;
}

/** Lowercase hex HMAC-SHA256 of the message (UTF-8), keyed with the secret's UTF-8 bytes: never hex-decoded. */
export function signatureOf(secret: string, message: string): string {
  return createHmac("sha256", Buffer.from(secret, "utf8")).update(message, "utf8").digest("hex");
}

/** Constant-time comparison of the presented HMAC with the one the secret gives. */
export function signatureMatches(secret: string, message: string, presented: Buffer): boolean {
  const expected = Buffer.from(signatureOf(secret, message), "hex");
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/** What idempotency compares: SHA-256 of the canonical body, so key order or number spelling never matters. */
export function bodyHash(canonicalBody: string): string {
  return hash("sha256", canonicalBody, "hex");
}
