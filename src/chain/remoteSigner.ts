// The hot wallet's remote signer (product §24): JSON-RPC eth_signTransaction at SIGNER_URL, bounded in time and size, every answer checked (its sender, and that it is the very transaction asked) before anything may store or broadcast it.
import {
  numberToHex,
  parseTransaction,
  recoverTransactionAddress,
  serializeTransaction,
  type TransactionSerializable,
} from "viem";
import { type Hex, type Signer, SignerError } from "../domain/chain.ts";
import { invariantViolation } from "../domain/result.ts";

/** Bound on a signer's answer: a signed transaction is a few hundred bytes; calldata of a batch a few KiB. */
export const SIGNER_MAX_ANSWER_BYTES = 256 * 1024;

/**
 * The probe's nonce: one the hot wallet will never reach, so the signed probe can never be mined
 * even if someone saw and broadcast it.
 */
export const PROBE_NONCE = Number.MAX_SAFE_INTEGER;

export interface RemoteSignerOptions {
  /** SIGNER_URL, revealed only here; it may hold credentials (sent as HTTP basic authentication). */
  url: string;
  address: Hex;
  timeoutMs: number;
}

interface Endpoint {
  href: string;
  headers: Record<string, string>;
}

/** fetch refuses URLs with credentials: they go in the authorization header instead. */
function endpointOf(url: string): Endpoint {
  const parsed = new URL(url);
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (parsed.username !== "" || parsed.password !== "") {
    const user = decodeURIComponent(parsed.username);
    const password = decodeURIComponent(parsed.password);
    headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
    parsed.username = "";
    parsed.password = "";
  }
  return { href: parsed.href, headers };
}

/** A Signer asking SIGNER_URL to sign for `address`. Throws SignerError (never with the URL in it). */
export function remoteSigner(options: RemoteSignerOptions): Signer {
  const endpoint = endpointOf(options.url);
  let id = 0;
  return {
    address: options.address,
    async signTransaction(tx: TransactionSerializable): Promise<Hex> {
      id = (id % Number.MAX_SAFE_INTEGER) + 1;
      const body = { jsonrpc: "2.0", id, method: "eth_signTransaction", params: [signRequest(options.address, tx)] };
      const raw = rawOf(await post(endpoint, body, options.timeoutMs));
      await checkSigned(raw, tx, options.address);
      return raw;
    },
  };
}

/**
 * The chain the signer is bound to (`eth_chainId`: anvil, geth and web3signer answer it), or null
 * when it does not say: the start-up check probes it when no network is configured yet.
 */
export async function signerChainId(options: RemoteSignerOptions): Promise<number | null> {
  try {
    const result = await post(
      endpointOf(options.url),
      { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
      options.timeoutMs,
    );
    const chainId = typeof result === "string" && /^0x[0-9a-f]{1,13}$/i.test(result) ? Number(result) : Number.NaN;
    return Number.isSafeInteger(chainId) && chainId > 0 ? chainId : null;
  } catch (error) {
    if (error instanceof SignerError) return null;
    throw error;
  }
}

/** The request geth, clef, anvil and web3signer accept: hex quantities; EIP-1559 fees or a gas price (the type follows). */
export function signRequest(from: Hex, tx: TransactionSerializable): Record<string, string> {
  if (tx.type !== undefined && tx.type !== "legacy" && tx.type !== "eip1559") {
    throw invariantViolation(`the remote signer signs legacy and EIP-1559 transactions, not ${tx.type}`);
  }
  if (tx.nonce === undefined || tx.chainId === undefined || tx.gas === undefined) {
    throw invariantViolation("a transaction for the remote signer names its nonce, chain and gas");
  }
  const request: Record<string, string> = {
    from,
    gas: numberToHex(tx.gas),
    value: numberToHex(tx.value ?? 0n),
    nonce: numberToHex(tx.nonce),
    chainId: numberToHex(tx.chainId),
  };
  if (tx.to) request.to = tx.to;
  if (tx.data && tx.data !== "0x") request.data = tx.data;
  if (tx.maxFeePerGas !== undefined) {
    request.maxFeePerGas = numberToHex(tx.maxFeePerGas);
    request.maxPriorityFeePerGas = numberToHex(tx.maxPriorityFeePerGas ?? 0n);
  } else if (tx.gasPrice !== undefined) {
    request.gasPrice = numberToHex(tx.gasPrice);
  } else {
    throw invariantViolation("a transaction for the remote signer names its fees");
  }
  return request;
}

function isTimeout(error: unknown): boolean {
  for (let cursor = error, depth = 0; depth < 5 && cursor instanceof Error; depth++) {
    if (cursor.name === "TimeoutError" || cursor.name === "AbortError") return true;
    cursor = (cursor as { cause?: unknown }).cause;
  }
  return false;
}

/** The system's code of a failed connection (ECONNREFUSED, ENOTFOUND…), never its message (it may hold the host's URL). */
function causeCode(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  return typeof cause?.code === "string" && /^[A-Z_]{1,40}$/.test(cause.code) ? cause.code : "no connection";
}

/** What a gateway in front of a signer answers when the signer behind it is down or slow. */
const GATEWAY_STATUSES = new Set([502, 503, 504]);

/** POSTs one JSON-RPC call; answers the JSON-RPC `result`. Bounded in time (the body included) and size. */
async function post(endpoint: Endpoint, body: unknown, timeoutMs: number): Promise<unknown> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(endpoint.href, {
      method: "POST",
      headers: endpoint.headers,
      body: JSON.stringify(body),
      signal,
      redirect: "error",
    });
    // A proxy or load balancer answering for a signer behind it that is down: the signer is not there.
    if (GATEWAY_STATUSES.has(response.status)) {
      await response.body?.cancel().catch(() => {});
      throw new SignerError("signer_unreachable", `the signer could not be reached (HTTP ${response.status})`);
    }
    const text = await boundedText(response);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SignerError("signer_bad_answer", `the signer answered HTTP ${response.status} without JSON`);
    }
    const answer = parsed as { result?: unknown; error?: { code?: unknown; message?: unknown } };
    if (answer !== null && typeof answer === "object" && answer.error !== undefined) {
      const message = typeof answer.error?.message === "string" ? answer.error.message : "no message";
      throw new SignerError("signer_refused", `the signer refused: ${printable(message)}`);
    }
    if (!response.ok) throw new SignerError("signer_refused", `the signer answered HTTP ${response.status}`);
    if (answer === null || typeof answer !== "object" || !("result" in answer)) {
      throw new SignerError("signer_bad_answer", "the signer's answer is not a JSON-RPC result");
    }
    return answer.result;
  } catch (error) {
    if (error instanceof SignerError) throw error;
    if (isTimeout(error)) throw new SignerError("signer_timeout", `the signer did not answer within ${timeoutMs} ms`);
    throw new SignerError("signer_unreachable", `the signer could not be reached (${causeCode(error)})`);
  }
}

/** A signer's message, shortened and without URLs (it may echo the request's). */
function printable(message: string): string {
  return message
    .replace(/https?:\/\/\S+/g, "<url>")
    .replace(/[^\x20-\x7e]/g, "?")
    .slice(0, 200);
}

/** The answer's body, cut off past SIGNER_MAX_ANSWER_BYTES. */
async function boundedText(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Bounded: each read adds bytes, and past the bound the stream is cancelled.
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > SIGNER_MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => {});
      throw new SignerError("signer_bad_answer", `the signer's answer is larger than ${SIGNER_MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The raw signed transaction of an answer: a hex string, or `{ raw, tx }` (geth's and clef's shape). */
function rawOf(result: unknown): Hex {
  const raw =
    typeof result === "string"
      ? result
      : result !== null && typeof result === "object"
        ? (result as { raw?: unknown }).raw
        : null;
  if (typeof raw !== "string" || !/^0x(?:[0-9a-fA-F]{2})+$/.test(raw)) {
    throw new SignerError("signer_bad_answer", "the signer's answer is not a raw signed transaction");
  }
  return raw.toLowerCase() as Hex;
}

/**
 * A signed transaction is kept only when it is the one asked, signed by SIGNER_ADDRESS: a signer
 * that answers anything else (another key, another recipient, value, nonce, fee…) is never
 * broadcast. Field by field for a clear message, then byte for byte (the asked transaction with
 * this signature must serialize to exactly these bytes).
 */
export async function checkSigned(raw: Hex, asked: TransactionSerializable, address: Hex): Promise<void> {
  let parsed: ReturnType<typeof parseTransaction>;
  let from: Hex;
  try {
    parsed = parseTransaction(raw);
    from = await recoverTransactionAddress({ serializedTransaction: raw as never });
  } catch {
    throw new SignerError("signer_bad_answer", "the signer's answer does not parse as a signed transaction");
  }
  if (from.toLowerCase() !== address.toLowerCase()) {
    throw new SignerError("signer_wrong_address", `the signer signed with ${from}, not with SIGNER_ADDRESS ${address}`);
  }
  const differs = differingField(parsed, asked);
  if (differs !== null) {
    throw new SignerError(
      "signer_tampered",
      `the signer signed another transaction than asked (its ${differs} differs)`,
    );
  }
  const { r, s, v, yParity } = parsed;
  if (r === undefined || s === undefined) throw new SignerError("signer_bad_answer", "the signer's answer is unsigned");
  const again = serializeTransaction(
    { ...asked, type: parsed.type } as TransactionSerializable,
    yParity !== undefined && parsed.type !== "legacy" ? { r, s, yParity } : { r, s, v: v ?? 0n },
  );
  if (again.toLowerCase() !== raw.toLowerCase()) {
    throw new SignerError("signer_tampered", "the signer signed another transaction than asked (its bytes differ)");
  }
}

/** The first field where the signed transaction is not the asked one, or null. */
function differingField(signed: ReturnType<typeof parseTransaction>, asked: TransactionSerializable): string | null {
  const askedType = asked.maxFeePerGas !== undefined ? "eip1559" : "legacy";
  const hexOf = (data: string | undefined) => (data ?? "0x").toLowerCase();
  const checks: [string, unknown, unknown][] = [
    ["type", signed.type, askedType],
    ["chain id", signed.chainId, asked.chainId],
    ["nonce", signed.nonce ?? 0, asked.nonce],
    ["recipient", signed.to?.toLowerCase() ?? null, asked.to?.toLowerCase() ?? null],
    ["value", signed.value ?? 0n, asked.value ?? 0n],
    ["data", hexOf(signed.data), hexOf(asked.data)],
    ["gas limit", signed.gas, asked.gas],
    ["max fee", signed.maxFeePerGas, asked.maxFeePerGas],
    [
      "priority fee",
      signed.maxPriorityFeePerGas,
      asked.maxFeePerGas === undefined ? undefined : (asked.maxPriorityFeePerGas ?? 0n),
    ],
    ["gas price", signed.gasPrice, asked.gasPrice],
    ["access list", (signed.accessList ?? []).length, 0],
  ];
  for (const [name, got, wanted] of checks) if (got !== wanted) return name;
  return null;
}

/**
 * The start-up check: the signer signs a probe for SIGNER_ADDRESS (a zero-value transfer to
 * itself at a nonce it never reaches, with a fee no block takes); nothing is broadcast. Throws
 * SignerError when it does not answer, or answers for another address or another transaction.
 */
export async function probeSigner(signer: Signer, chainId: number): Promise<void> {
  await signer.signTransaction({
    type: "eip1559",
    chainId,
    nonce: PROBE_NONCE,
    to: signer.address,
    value: 0n,
    gas: 21_000n,
    maxFeePerGas: 1n,
    maxPriorityFeePerGas: 1n,
  });
}
