// Worker loops survive failing batches (the store down): they log, back off with a bound, and carry on.
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { StoreUnavailableError } from "../../src/store/unavailable.ts";
import { backoffMs, LOOP_MAX_BACKOFF_MS, startLoop } from "../../src/workers/loop.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("worker loop", () => {
  it("doubles its pause after each failure in a row, up to the bound, and starts over after a success", () => {
    expect(backoffMs(1000, 1)).toBe(2000);
    expect(backoffMs(1000, 2)).toBe(4000);
    expect(backoffMs(1000, 50)).toBe(LOOP_MAX_BACKOFF_MS);
    expect(backoffMs(0, 3)).toBe(8);
    // An idle pause longer than the bound is never shortened.
    expect(backoffMs(60_000, 1)).toBe(60_000);
  });

  it("keeps running while batches fail, then handles work once the store is back", async () => {
    vi.useFakeTimers();
    const lines: { msg: string; level: number; retryInMs?: number }[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    let failing = true;
    let batches = 0;
    let handled = 0;
    const loop = startLoop({
      name: "test",
      idleMs: 100,
      log,
      runBatch: async () => {
        batches++;
        if (failing)
          throw new StoreUnavailableError("cannot connect to PostgreSQL", { cause: new Error("ECONNREFUSED") });
        handled++;
        return 0;
      },
    });
    // 100 ms to the first batch, then 200, 400, 800, 1600, 3200, 6400, 10000 (bound), 10000 …
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 800 + 1600 + 3200 + 6400 + 10_000 + 10_000);
    expect(batches).toBe(9);
    const warnings = lines.filter((l) => l.msg === "worker batch failed: store unavailable");
    expect(warnings).toHaveLength(9);
    expect(warnings.at(-1)?.retryInMs).toBe(LOOP_MAX_BACKOFF_MS);
    failing = false;
    await vi.advanceTimersByTimeAsync(LOOP_MAX_BACKOFF_MS);
    expect(handled).toBe(1);
    // After a success the pause is the idle pause again.
    await vi.advanceTimersByTimeAsync(100);
    expect(handled).toBe(2);
    await loop.stop();
  });
});
