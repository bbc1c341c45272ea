// Row ids: UUIDv7 with the creation millisecond first and 74 random bits after it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { newRowId, rowIdTime } from "../../src/domain/ids.ts";

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("newRowId", () => {
  it("is a version 7, variant 10 UUID carrying the millisecond it was made in", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), (count) => {
        for (let i = 0; i < count; i++) {
          const before = Date.now();
          const id = newRowId();
          const after = Date.now();
          expect(id).toMatch(V7);
          expect(rowIdTime(id)).toBeGreaterThanOrEqual(before);
          expect(rowIdTime(id)).toBeLessThanOrEqual(after);
        }
      }),
      { numRuns: 50 },
    );
  });

  it("sorts by creation time across milliseconds", async () => {
    const first = newRowId();
    await new Promise((resolve) => setTimeout(resolve, 3));
    const second = newRowId();
    expect(first < second).toBe(true);
  });

  it("keeps its random part unpredictable: no two ids of one millisecond share it, nor count up", () => {
    const ids = Array.from({ length: 20_000 }, () => newRowId());
    expect(new Set(ids).size).toBe(ids.length);
    const tails = ids.map((id) => BigInt(`0x${id.slice(15).replaceAll("-", "")}`));
    let consecutive = 0;
    for (let i = 1; i < tails.length; i++) {
      const a = tails[i - 1] ?? 0n;
      const b = tails[i] ?? 0n;
      if (b - a === 1n) consecutive += 1;
    }
    expect(consecutive).toBe(0);
    // About half of the random bits differ between neighbours (a counter would change a few).
    const differing = tails.slice(0, 2000).map((tail, i) => {
      const x = tail ^ (tails[i + 1] ?? 0n);
      return x.toString(2).replaceAll("0", "").length;
    });
    const mean = differing.reduce((s, n) => s + n, 0) / differing.length;
    expect(mean).toBeGreaterThan(30);
  });
});
