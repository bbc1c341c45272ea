// A woken loop runs its next batch at once instead of after its idle pause (the callback worker wakes it when an attempt frees a slot).
import pino from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startLoop } from "../../src/workers/loop.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("waking a worker loop", () => {
  it("runs the next batch at once when idle, and right after the batch in progress when one runs", async () => {
    vi.useFakeTimers();
    const log = pino({ level: "silent" });
    let batches = 0;
    let release: (() => void) | null = null;
    const loop = startLoop({
      name: "test",
      idleMs: 60_000,
      log,
      runBatch: async () => {
        batches++;
        if (batches === 2) await new Promise<void>((resolve) => (release = resolve));
        return 0;
      },
    });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(batches).toBe(1);
    // Idle for another minute: woken, the next batch runs now.
    loop.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toBe(2);
    // Woken while that batch runs: the one after it does not wait the idle pause either.
    loop.wake();
    (release as (() => void) | null)?.();
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toBe(3);
    // Not woken: the idle pause again.
    await vi.advanceTimersByTimeAsync(59_000);
    expect(batches).toBe(3);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(batches).toBe(4);
    await loop.stop();
  });

  it("never starts a loop that does not start by itself", async () => {
    vi.useFakeTimers();
    let batches = 0;
    const loop = startLoop({
      name: "test",
      idleMs: 10,
      autoStart: false,
      log: pino({ level: "silent" }),
      runBatch: async () => ++batches,
    });
    loop.wake();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(batches).toBe(0);
    await loop.stop();
  });
});
