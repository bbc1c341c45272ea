// The retry schedule of callback deliveries: fixed waits as data, spread by jitter, about a day in all.
import { assert } from "./result.ts";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Wait before each retry: entry i is the wait after the (i + 1)-th failed attempt of a delivery
 * round. The first attempt is immediate; with these 7 retries the last attempt comes about 23.6
 * hours after the first, so a merchant endpoint that is down for most of a day still gets the event.
 */
export const CALLBACK_RETRY_DELAYS_MS: readonly number[] = [
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  8 * HOUR,
  8 * HOUR,
];

/** Attempts in one delivery round: the first one and one per retry. */
export const CALLBACK_MAX_ATTEMPTS = CALLBACK_RETRY_DELAYS_MS.length + 1;

/**
 * Each wait is stretched or shrunk by up to this fraction at random, so that the events of an
 * endpoint that came back up do not all arrive in the same second.
 */
export const CALLBACK_RETRY_JITTER = 0.1;

/**
 * The wait before the next attempt after `failedAttempts` failures in this round (1 after the
 * first failure), or null when the round is over and the event is marked failed.
 * `random` returns a number in [0, 1), as Math.random does; tests pass a fixed one.
 */
export function callbackRetryDelayMs(failedAttempts: number, random: () => number = Math.random): number | null {
  assert(Number.isInteger(failedAttempts) && failedAttempts >= 1, "failedAttempts counts at least one failure");
  const base = CALLBACK_RETRY_DELAYS_MS[failedAttempts - 1];
  if (base === undefined) return null;
  const r = random();
  assert(r >= 0 && r < 1, "random() is in [0, 1)");
  return Math.round(base * (1 - CALLBACK_RETRY_JITTER + 2 * CALLBACK_RETRY_JITTER * r));
}
