// The callback retry schedule: its written waits, about a day in all, and jitter within its bounds.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CALLBACK_MAX_ATTEMPTS,
  CALLBACK_RETRY_DELAYS_MS,
  CALLBACK_RETRY_JITTER,
  callbackRetryDelayMs,
} from "../../src/domain/callbackSchedule.ts";

const HOUR = 3600_000;

describe("callback retry schedule", () => {
  it("is the documented list of waits: 5 s, 5 min, 30 min, 2 h, 5 h, 8 h, 8 h", () => {
    expect(CALLBACK_RETRY_DELAYS_MS).toEqual([5_000, 300_000, 1_800_000, 2 * HOUR, 5 * HOUR, 8 * HOUR, 8 * HOUR]);
    expect(CALLBACK_MAX_ATTEMPTS).toBe(8);
  });

  it("backs off: no wait is shorter than the one before", () => {
    for (let i = 1; i < CALLBACK_RETRY_DELAYS_MS.length; i++) {
      expect(CALLBACK_RETRY_DELAYS_MS[i]!).toBeGreaterThanOrEqual(CALLBACK_RETRY_DELAYS_MS[i - 1]!);
    }
  });

  it("spans about a day from the first attempt to the last, jitter included", () => {
    const total = CALLBACK_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
    expect(total * (1 - CALLBACK_RETRY_JITTER)).toBeGreaterThan(20 * HOUR);
    expect(total * (1 + CALLBACK_RETRY_JITTER)).toBeLessThan(27 * HOUR);
  });

  it("gives the written wait with no jitter at the middle of the random range", () => {
    CALLBACK_RETRY_DELAYS_MS.forEach((base, i) => {
      expect(callbackRetryDelayMs(i + 1, () => 0.5)).toBe(base);
    });
  });

  it("keeps every jittered wait within ±10% of the written one", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: CALLBACK_RETRY_DELAYS_MS.length }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (failures, r) => {
          const base = CALLBACK_RETRY_DELAYS_MS[failures - 1]!;
          const wait = callbackRetryDelayMs(failures, () => r)!;
          expect(wait).toBeGreaterThanOrEqual(Math.floor(base * (1 - CALLBACK_RETRY_JITTER)));
          expect(wait).toBeLessThanOrEqual(Math.ceil(base * (1 + CALLBACK_RETRY_JITTER)));
        },
      ),
    );
    expect(callbackRetryDelayMs(1, () => 0)).toBe(4500);
    expect(callbackRetryDelayMs(1, () => 0.999999)).toBe(5500);
  });

  it("ends the round after the last retry: the event is then failed", () => {
    expect(callbackRetryDelayMs(CALLBACK_MAX_ATTEMPTS, () => 0.5)).toBeNull();
    expect(callbackRetryDelayMs(CALLBACK_MAX_ATTEMPTS + 5, () => 0.5)).toBeNull();
  });

  it("refuses a failure count below one and a random value out of range", () => {
    expect(() => callbackRetryDelayMs(0)).toThrow(/invariant violated/);
    expect(() => callbackRetryDelayMs(1.5)).toThrow(/invariant violated/);
    expect(() => callbackRetryDelayMs(1, () => 1)).toThrow(/invariant violated/);
  });
});
