// One callback HTTP attempt: POST to a pinned address, no redirects, bounded in time and in how much of the answer is read.
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import type { CallbackDestination, ResolvedAddress } from "../app/callbackDestination.ts";
import { callbackCredentials, classifyAddress } from "../domain/callbackUrl.ts";
import { assert } from "../domain/result.ts";

/** How much of an answer's body is read and kept: enough to see an error message, never a flood (product §18). */
export const RESPONSE_BODY_LIMIT_BYTES = 2048;

export interface CallbackPost {
  destination: CallbackDestination;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /**
   * Whether the answer (its body and a redirect's target) may be kept. Only a public address's
   * answer is: a loopback service (the sandbox allows one) is not the merchant's to read (product §18).
   */
  keepAnswer: boolean;
}

/** Answers are kept from public addresses only. */
export function answerKeptFrom(address: string): boolean {
  return classifyAddress(address) === null;
}

export interface CallbackAnswer {
  /** Null when no HTTP answer came. */
  statusCode: number | null;
  /** Why the attempt failed without an answer, or why an answer does not count (a redirect). */
  error: string | null;
  /** Null when no answer came, or when it came from an address that is not public. */
  responseBody: string | null;
  durationMs: number;
}

/** A lookup that answers the already checked address whatever the name, in both callback shapes Node uses. */
function pinnedLookup(pinned: ResolvedAddress): LookupFunction {
  return ((_hostname: string, options: unknown, callback: unknown) => {
    const done = (typeof options === "function" ? options : callback) as (...args: unknown[]) => void;
    const all = typeof options === "object" && options !== null && (options as { all?: boolean }).all === true;
    if (all) done(null, [{ address: pinned.address, family: pinned.family }]);
    else done(null, pinned.address, pinned.family);
  }) as LookupFunction;
}

/** PostgreSQL text cannot hold NUL, and a merchant's answer may contain anything. */
function storableText(bytes: Buffer): string {
  return bytes.toString("utf8").replaceAll("\u0000", "\uFFFD");
}

function describeError(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  const text =
    e.code === "ECONNREFUSED"
      ? "connection refused"
      : e.code === "ECONNRESET"
        ? "connection reset"
        : `${e.code ? `${e.code}: ` : ""}${e.message ?? String(error)}`;
  return text.slice(0, 500);
}

// longer than 70 lines: one request's life (pinned connect, send, bounded read, timeout) whose event
// handlers share the one `finish` that must run exactly once; apart, that guarantee would be spread out.
export function postCallback(post: CallbackPost): Promise<CallbackAnswer> {
  const { url, address } = post.destination;
  const started = performance.now();
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const body = Buffer.from(post.body, "utf8");
  const decoded = callbackCredentials(url);
  // The destination was parsed by parseCallbackUrl, which refuses credentials that do not decode.
  assert(decoded.ok, `a checked callback URL has decodable credentials`);
  const credentials = decoded.value;
  const keepAnswer = post.keepAnswer;
  return new Promise<CallbackAnswer>((resolve) => {
    let settled = false;
    let response: IncomingMessage | null = null;
    const chunks: Buffer[] = [];
    let kept = 0;

    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      const statusCode = response?.statusCode ?? null;
      let reason = error;
      if (reason === null && statusCode !== null && statusCode >= 300 && statusCode < 400) {
        reason = keepAnswer
          ? `redirect not followed (${String(response?.headers.location ?? "no location").slice(0, 300)})`
          : "redirect not followed";
      }
      resolve({
        statusCode,
        error: reason,
        responseBody: response && keepAnswer ? storableText(Buffer.concat(chunks)) : null,
        durationMs: Math.max(0, Math.round(performance.now() - started)),
      });
    };

    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const req = send({
      protocol: url.protocol,
      hostname,
      port: url.port === "" ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: "POST",
      headers: { ...post.headers, "content-length": String(body.length) },
      // A fresh connection per attempt: a pooled socket could lead to an address this attempt did not check.
      agent: false,
      lookup: pinnedLookup(address),
      ...(credentials === null ? {} : { auth: credentials }),
      // TLS names the host the merchant wrote, while the connection goes to the pinned address.
      ...(url.protocol === "https:" && isIP(hostname) === 0 ? { servername: hostname } : {}),
    });
    // One bound for the whole attempt: connecting, sending, and reading the answer.
    const timer = setTimeout(
      () => finish(response ? null : `timeout: no answer within ${post.timeoutMs} ms`),
      post.timeoutMs,
    );
    req.on("response", (res) => {
      response = res;
      // Its status is all that counts: the rest of a hidden answer is not worth waiting for.
      if (!keepAnswer) return finish(null);
      res.on("data", (chunk: Buffer) => {
        const room = RESPONSE_BODY_LIMIT_BYTES - kept;
        if (room > 0) {
          const part = chunk.subarray(0, room);
          chunks.push(part);
          kept += part.length;
        }
        // The answer's status is what counts; past the limit the rest is not worth waiting for.
        if (kept >= RESPONSE_BODY_LIMIT_BYTES) finish(null);
      });
      res.on("end", () => finish(null));
      res.on("error", () => finish(null));
      res.on("aborted", () => finish(null));
    });
    req.on("error", (error) => finish(describeError(error)));
    req.end(body);
  });
}
