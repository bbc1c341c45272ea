// Test signing client written from docs/merchant-api.md ("Request signing") alone: it shares no code with the server, not even its JCS library.
import { createHmac, randomUUID } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { Answer } from "./server.ts";

export const WITHDRAWALS_PATH = "/public/v1/withdrawals/create";

function hasLoneSurrogate(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) {
      return true;
    }
  }
  return false;
}

function jcsString(text: string): string {
  if (hasLoneSurrogate(text)) throw new Error("JCS: lone surrogate");
  // ECMAScript JSON.stringify escapes exactly what RFC 8785 §3.2.2.2 asks for once lone surrogates are excluded.
  return JSON.stringify(text);
}

/** Orders property names by their UTF-16 code units (RFC 8785 §3.2.3), not by locale or code point. */
function compareUtf16(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const difference = a.charCodeAt(i) - b.charCodeAt(i);
    if (difference !== 0) return difference;
  }
  return a.length - b.length;
}

/** RFC 8785 JSON Canonicalization Scheme of a parsed JSON value. */
export function jcs(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error("JCS: NaN and Infinity have no JSON form");
    // ECMAScript Number-to-String is the RFC 8785 number form; -0 becomes "0".
    return JSON.stringify(value);
  }
  if (typeof value === "string") return jcsString(value);
  if (Array.isArray(value)) return `[${value.map(jcs).join(",")}]`;
  if (typeof value === "object") {
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort(compareUtf16)
      .map((key) => `${jcsString(key)}:${jcs(record[key])}`);
    return `{${members.join(",")}}`;
  }
  throw new Error(`JCS: ${typeof value} is not JSON`);
}

/** message = POST LF path LF timestamp LF request id LF canonical body. */
export function signingMessage(parts: {
  method?: string;
  path: string;
  timestamp: string;
  requestId: string;
  body: string;
}): string {
  return [parts.method ?? "POST", parts.path, parts.timestamp, parts.requestId, parts.body].join("\n");
}

/** `v1=` + lowercase hex HMAC-SHA256; a string key is used as UTF-8 text, a Buffer as raw bytes. */
export function signatureHeader(key: string | Buffer, message: string, encoding: BufferEncoding = "utf8"): string {
  const keyBytes = typeof key === "string" ? Buffer.from(key, "utf8") : key;
  return `v1=${createHmac("sha256", keyBytes).update(Buffer.from(message, encoding)).digest("hex")}`;
}

export function nowSeconds(offsetSeconds = 0): string {
  return String(Math.floor(Date.now() / 1000) + offsetSeconds);
}

/** An HTTP call with full control over headers: a header given as an array is sent once per value. */
export function rawCall(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string | string[]>,
  body?: string | Buffer,
): Promise<Answer<any>> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path: `${url.pathname}${url.search}`, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === "string") responseHeaders.set(name, value);
            else if (Array.isArray(value)) for (const v of value) responseHeaders.append(name, v);
          }
          const contentType = responseHeaders.get("content-type") ?? "";
          const parsed = contentType.includes("json") && text !== "" ? JSON.parse(text) : text;
          resolve({ status: res.statusCode ?? 0, headers: responseHeaders, body: parsed, text });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

export interface SignedCallOptions {
  apiKey: string;
  /** The secret key as text (used as UTF-8), or raw key bytes to sign with (e.g. a wrongly hex-decoded secret). */
  secret: string | Buffer;
  /** Path requested (may carry a query); default CreateWithdrawal. */
  path?: string;
  /** Path put in the signed message; default the requested path without its query. */
  signedPath?: string;
  /** The JSON body, sent as JSON.stringify gives it unless rawBody is set. */
  body?: unknown;
  rawBody?: string | Buffer;
  /** Body text put in the message; default the RFC 8785 form of the sent body. */
  signedBody?: string;
  requestId?: string;
  /** Request id put in the message; default the one sent. */
  signedRequestId?: string;
  timestamp?: string;
  method?: string;
  /** Replaces the computed x-service-request-signature. */
  signature?: string;
  /** Encoding of the message bytes; default UTF-8. */
  messageEncoding?: BufferEncoding;
  /** Extra or replacing headers; null removes one. */
  headers?: Record<string, string | string[] | null>;
}

export interface SignedCall {
  answer: Answer<any>;
  requestId: string;
  timestamp: string;
  signature: string;
  sentBody: string;
}

/** Signs and sends a request the way the interface tells a merchant to, with every part overridable for negative tests. */
export async function signedCall(baseUrl: string, options: SignedCallOptions): Promise<SignedCall> {
  const path = options.path ?? WITHDRAWALS_PATH;
  const requestId = options.requestId ?? randomUUID();
  const timestamp = options.timestamp ?? nowSeconds();
  const sent = options.rawBody ?? JSON.stringify(options.body ?? {});
  const sentBody = typeof sent === "string" ? sent : sent.toString("utf8");
  const message = signingMessage({
    method: "POST",
    path: options.signedPath ?? path.split("?")[0] ?? path,
    timestamp,
    requestId: options.signedRequestId ?? requestId,
    body: options.signedBody ?? jcs(JSON.parse(sentBody)),
  });
  const signature = options.signature ?? signatureHeader(options.secret, message, options.messageEncoding);
  const headers: Record<string, string | string[]> = {
    "x-api-key": options.apiKey,
    "x-service-timestamp": timestamp,
    "x-service-request-id": requestId,
    "x-service-request-signature": signature,
    "content-type": "application/json",
  };
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === null) delete headers[name];
    else headers[name] = value;
  }
  const answer = await rawCall(baseUrl, options.method ?? "POST", path, headers, sent);
  return { answer, requestId, timestamp, signature, sentBody };
}
