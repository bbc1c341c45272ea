// The request headers the service reads, each sent at most once: a repeated one is refused before any hook reads it.
import type { FastifyRequest, onRequestHookHandler } from "fastify";
import { assert } from "../domain/result.ts";
import { type ErrorCode, Problem } from "./problem.ts";

/**
 * Every header the service reads, with the problem a repeated one gets (the code the header's own
 * invalid values get, docs/signed-operations.md). Node keeps only the first of some repeated
 * headers (content-type, authorization) and joins others with ", ", so without this check a
 * repeated header was either silently half-read or refused with a misleading detail.
 * `singleHeader` reads only headers listed here.
 */
export const READ_HEADERS: Readonly<Record<string, ErrorCode>> = {
  "content-type": "unsupported_media_type",
  "content-length": "validation_failed",
  "x-api-key": "invalid_api_key",
  authorization: "invalid_admin_token",
  "x-service-timestamp": "invalid_timestamp",
  "x-service-request-id": "invalid_request_id",
  "x-service-request-signature": "invalid_signature_format",
  "x-request-id": "validation_failed",
};

/** The first header, among those the service reads, that the request repeats; null when none is. */
export function repeatedReadHeader(rawHeaders: readonly string[]): string | null {
  let seen: Set<string> | null = null;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase();
    if (!Object.hasOwn(READ_HEADERS, name)) continue;
    seen ??= new Set();
    if (seen.has(name)) return name;
    seen.add(name);
  }
  return null;
}

/** First onRequest hook: a request that repeats a header the service reads is refused. */
export const refuseRepeatedHeaders: onRequestHookHandler = (request, _reply, done) => {
  const name = repeatedReadHeader(request.raw.rawHeaders);
  if (name === null) {
    done();
    return;
  }
  done(new Problem(READ_HEADERS[name] as ErrorCode, `The ${name} header must be sent at most once.`));
};

/** A header the service reads; undefined when absent (a repeated one never gets this far). */
export function singleHeader(request: FastifyRequest, name: keyof typeof READ_HEADERS): string | undefined {
  assert(Object.hasOwn(READ_HEADERS, name), `header ${name} is not in READ_HEADERS`);
  const value = request.headers[name];
  return typeof value === "string" ? value : undefined;
}
