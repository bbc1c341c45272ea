// Throttles on the wire: the Retry-After header of a refused attempt, and the process-local counter /metrics uses while the store is down.
import type { FastifyReply } from "fastify";
import type { ThrottleRule } from "../app/throttles.ts";

export function setRetryAfter(reply: FastifyReply, retryAfterSeconds: number): void {
  reply.header("retry-after", String(retryAfterSeconds));
}

/** At most this many subjects in a process-local counter; when full it starts afresh (a bound, not a policy). */
const LOCAL_SUBJECTS = 10_000;

/**
 * The same fixed windows in this process's memory, for the one check that must work while the
 * store is down (/metrics still answers then): attempts are still counted before they are
 * evaluated, per process only.
 */
export class LocalThrottle {
  readonly #windows = new Map<string, { startedMs: number; attempts: number }>();

  /** Reserves one attempt of `rule`: the seconds to wait when it is over the limit, else null. */
  reserve(rule: ThrottleRule, nowMs = Date.now()): number | null {
    if (rule.limit === 0) return null;
    let window = this.#windows.get(rule.subject);
    if (!window || window.startedMs + rule.windowMs <= nowMs) {
      if (this.#windows.size >= LOCAL_SUBJECTS) this.#windows.clear();
      window = { startedMs: nowMs, attempts: 0 };
      this.#windows.set(rule.subject, window);
    }
    window.attempts += 1;
    if (window.attempts <= rule.limit) return null;
    return Math.max(1, Math.ceil((window.startedMs + rule.windowMs - nowMs) / 1000));
  }

  release(rule: ThrottleRule): void {
    const window = this.#windows.get(rule.subject);
    if (window && window.attempts > 0) window.attempts -= 1;
  }
}
