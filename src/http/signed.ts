// Signed operations on Fastify's lifecycle: key, headers, signature and safe retries in the check order of product §8.
import type {
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  preParsingAsyncHookHandler,
  preValidationAsyncHookHandler,
} from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { type IdempotentRequest, needsReconciliation } from "../app/performOnce.ts";
import { judgeRetry, type RetryVerdict } from "../domain/idempotency.ts";
import { assert } from "../domain/result.ts";
import {
  bodyHash,
  canonicalJson,
  checkRequestId,
  checkSignatureFormat,
  checkTimestamp,
  signatureMatches,
  signingMessage,
} from "../domain/signing.ts";
import { openApiSecret } from "../store/merchants.ts";
import { findSignedRequest } from "../store/signedRequests.ts";
import type { Tx } from "../store/store.ts";
import { merchantAuth, ownerOf } from "./auth.ts";
import { singleHeader } from "./headers.ts";
import { type ErrorCode, Problem } from "./problem.ts";

/** The signature headers as read before the body (formats checked). */
interface SignatureHeaders {
  timestamp: string;
  requestIdSent: string;
  requestKey: string;
  signature: Buffer;
}

/** A signed request whose signature verified. */
export interface VerifiedSignedRequest extends IdempotentRequest {
  canonicalBody: string;
}

declare module "fastify" {
  interface FastifyRequest {
    signatureHeaders?: SignatureHeaders;
    signedRequest?: VerifiedSignedRequest;
  }
}

/** `application/json`, optionally with parameters; a charset, if given, must be UTF-8 (the signature covers UTF-8 bytes). */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false;
  const [media = "", ...parameters] = header.split(";");
  if (media.trim().toLowerCase() !== "application/json") return false;
  return parameters.every((parameter) => {
    const [name = "", value = ""] = parameter.split("=");
    if (name.trim().toLowerCase() !== "charset") return true;
    return (
      value
        .trim()
        .replace(/^"(.*)"$/, "$1")
        .toLowerCase() === "utf-8"
    );
  });
}

function refuse(code: ErrorCode, detail: string | undefined, fallback: string): Problem {
  return new Problem(code, detail ?? fallback);
}

/**
 * preParsing, before the body is read: the key must have a secret (403), then the timestamp, the
 * request id and the signature header must be well formed (401), then the content type (415).
 */
function checkSignatureHeaders(): preParsingAsyncHookHandler {
  return async (request, _reply, payload) => {
    const owner = ownerOf(request);
    if (owner.legacy || owner.secretEncrypted === null) {
      throw new Problem(
        "api_key_reissue_required",
        "This API key was issued before signed operations existed; have it revoked and reissued to get a secret key.",
      );
    }
    const timestampHeader = singleHeader(request, "x-service-timestamp");
    const timestamp = checkTimestamp(timestampHeader, Date.now());
    if (!timestamp.ok) throw refuse(timestamp.error, timestamp.detail, "invalid timestamp");
    const requestIdSent = singleHeader(request, "x-service-request-id");
    const requestKey = checkRequestId(requestIdSent);
    if (!requestKey.ok) throw refuse(requestKey.error, requestKey.detail, "invalid request id");
    const signature = checkSignatureFormat(singleHeader(request, "x-service-request-signature"));
    if (!signature.ok) throw refuse(signature.error, signature.detail, "invalid signature");
    if (!isJsonContentType(singleHeader(request, "content-type"))) {
      throw new Problem("unsupported_media_type", "Signed operations take content-type: application/json.");
    }
    request.signatureHeaders = {
      timestamp: timestampHeader as string,
      requestIdSent: requestIdSent as string,
      requestKey: requestKey.value,
      signature: signature.value,
    };
    return payload;
  };
}

/** preValidation, after the strict JSON parser: canonical body (RFC 8785), then the HMAC over the message. */
function verifySignature(ctx: ServiceContext, route: string): preValidationAsyncHookHandler {
  return async (request) => {
    const headers = request.signatureHeaders;
    assert(headers, "signature headers were checked in preParsing");
    const canonical = canonicalJson(request.body);
    if (!canonical.ok) throw new Problem("malformed_json", canonical.detail ?? "The body is not valid JSON.");
    const owner = ownerOf(request);
    const secret = openApiSecret(ctx.box, owner);
    assert(secret !== null, "keys without a secret are refused in preParsing");
    const message = signingMessage({
      path: route,
      timestamp: headers.timestamp,
      requestId: headers.requestIdSent,
      canonicalBody: canonical.value,
    });
    if (!signatureMatches(secret, message, headers.signature)) {
      throw new Problem(
        "invalid_signature",
        "The signature does not match: sign POST, the route, the timestamp, the request id and the RFC 8785 canonical body with your secret key.",
      );
    }
    request.signedRequest = {
      route,
      merchantId: owner.merchantId,
      requestIdSent: headers.requestIdSent,
      requestKey: headers.requestKey,
      canonicalBody: canonical.value,
      bodyHash: bodyHash(canonical.value),
    };
  };
}

const CONFLICT_DETAIL: Record<Exclude<RetryVerdict, { kind: "replay" }>["code"], string> = {
  request_id_unavailable: "This request id cannot be used. Use a new request id for a new operation.",
  request_id_reused: "This request id was already used with a different body or endpoint.",
  request_in_progress: "The operation with this request id is still running; retry later with the same request id.",
  request_needs_reconciliation:
    "The payout of the operation with this request id needs reconciliation; its outcome is being established. Do not send it under a new request id.",
};

async function verdictFor(tx: Tx, signed: IdempotentRequest): Promise<RetryVerdict | null> {
  const recorded = await findSignedRequest(tx, signed.requestKey);
  if (!recorded) return null;
  return judgeRetry(recorded, signed, await needsReconciliation(tx, signed.requestKey));
}

/** Answers a verdict: a conflict as its Problem (409), a replay with the recorded bytes. */
export function answerVerdict(reply: FastifyReply, verdict: RetryVerdict): FastifyReply {
  if (verdict.kind === "conflict") throw new Problem(verdict.code, CONFLICT_DETAIL[verdict.code]);
  // The recorded text itself, never re-serialized: a retry gets the original bytes.
  return reply.code(verdict.status).type("application/json; charset=utf-8").send(verdict.body);
}

/**
 * preValidation, after the signature: a body the schema would refuse is answered here when its
 * request id is already recorded, so a reused id is a 409 (or its replay) even when the new body
 * would not validate. A valid body goes on without this lookup: the operation's own transaction
 * claims its id and finds a recorded one there (performOnce), which spares every new
 * operation a random read of the signed requests.
 */
function replayRecorded(ctx: ServiceContext): preValidationAsyncHookHandler {
  return async (request, reply) => {
    if (request.getValidationFunction("body")?.(request.body) === true) return;
    const signed = signedRequestOf(request);
    const verdict = await verdictFor(ctx.store, signed);
    if (verdict) return answerVerdict(reply, verdict);
  };
}

export function signedRequestOf(request: FastifyRequest): VerifiedSignedRequest {
  const signed = request.signedRequest;
  assert(signed, "route is a signed operation");
  return signed;
}

export interface SignedOperationHooks {
  onRequest: onRequestHookHandler[];
  preParsing: preParsingAsyncHookHandler[];
  preValidation: preValidationAsyncHookHandler[];
}

/**
 * The hooks of a signed route at `route` (its exact path, which is also what is signed). The rate
 * limit plugin appends its onRequest hook after these, so the key is checked before the limit.
 */
export function signedOperation(ctx: ServiceContext, route: string): SignedOperationHooks {
  return {
    onRequest: [merchantAuth(ctx)],
    preParsing: [checkSignatureHeaders()],
    preValidation: [verifySignature(ctx, route), replayRecorded(ctx)],
  };
}
