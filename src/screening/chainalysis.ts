// The screening provider with the Chainalysis sanctions API's shape (product §21): GET {url}/api/v1/address/{address} with X-API-Key, bounded in time, size and cache.
import {
  type ProviderStatus,
  providerVerdict,
  type ScreeningProviderSource,
  type ScreeningVerdict,
  screeningKey,
} from "../domain/screening.ts";

/** The largest answer read: a sanctions answer is a few hundred bytes; a bigger one is no answer. */
export const MAX_PROVIDER_BODY_BYTES = 64 * 1024;
/** Addresses whose answer is kept. */
export const PROVIDER_CACHE_ENTRIES = 10_000;

export interface ProviderOptions {
  url: string;
  apiKey: string;
  timeoutMs: number;
  /** How long a definitive answer is reused. */
  cacheMs: number;
  now?: () => number;
}

/** Reads at most `limit` bytes of a body; more is an error (the rest is not read). */
async function boundedText(response: Response, limit: number): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new Error(`answer larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export class ChainalysisScreening implements ScreeningProviderSource {
  /** Insertion-ordered: the oldest entry goes first when the cache is full. */
  readonly #cache = new Map<string, { verdict: ScreeningVerdict; until: number }>();
  #available = true;
  #lastAnswerAt: string | null = null;
  #lastFailureAt: string | null = null;
  #lastFailure: string | null = null;
  readonly #now: () => number;

  constructor(private readonly options: ProviderOptions) {
    this.#now = options.now ?? Date.now;
  }

  cached(address: string): ScreeningVerdict | null {
    const key = screeningKey(address);
    const hit = this.#cache.get(key);
    if (!hit) return null;
    if (hit.until <= this.#now()) {
      this.#cache.delete(key);
      return null;
    }
    return hit.verdict;
  }

  async check(address: string): Promise<ScreeningVerdict> {
    const hit = this.cached(address);
    if (hit !== null) return hit;
    const key = screeningKey(address);
    let verdict: ScreeningVerdict;
    try {
      verdict = await this.#ask(key);
    } catch (error) {
      return this.#failed((error as Error).message);
    }
    if (verdict === "unavailable") return this.#failed("the answer is not { identifications: [...] }");
    this.#available = true;
    this.#lastAnswerAt = new Date(this.#now()).toISOString();
    if (this.#cache.size >= PROVIDER_CACHE_ENTRIES) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    this.#cache.set(key, { verdict, until: this.#now() + this.options.cacheMs });
    return verdict;
  }

  async #ask(key: string): Promise<ScreeningVerdict> {
    const url = `${this.options.url.replace(/\/+$/, "")}/api/v1/address/${encodeURIComponent(key)}`;
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    const response = await fetch(url, {
      headers: { "X-API-Key": this.options.apiKey, accept: "application/json" },
      redirect: "error",
      signal,
    });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`status ${response.status}`);
    }
    const text = await boundedText(response, MAX_PROVIDER_BODY_BYTES);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return "unavailable";
    }
    return providerVerdict(body);
  }

  #failed(detail: string): ScreeningVerdict {
    this.#available = false;
    this.#lastFailureAt = new Date(this.#now()).toISOString();
    this.#lastFailure = detail;
    return "unavailable";
  }

  status(): ProviderStatus {
    return {
      url: this.options.url,
      available: this.#available,
      lastAnswerAt: this.#lastAnswerAt,
      lastFailureAt: this.#lastFailureAt,
      lastFailure: this.#lastFailure,
      cached: this.#cache.size,
    };
  }
}
