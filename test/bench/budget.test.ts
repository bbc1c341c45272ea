// The bench's CPU budget: what the machine leaves a server per request at a target rate.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { budgetAt, verdict } from "../../bench/budget.ts";

describe("budgetAt", () => {
  it("gives a server what the cores leave after the load generator, spread over the target rate", () => {
    // 2 cores at 10 000 req/s: 200 µs per request, 40 of them the load generator's.
    expect(budgetAt({ cores: 2, targetRate: 10_000, loadGeneratorUs: 40, processes: 1 })).toEqual({
      allThreadsUs: 160,
      eventLoopUs: 100,
    });
    // Two processes: each event loop serves half the requests.
    expect(budgetAt({ cores: 2, targetRate: 10_000, loadGeneratorUs: 40, processes: 2 }).eventLoopUs).toBe(200);
  });

  it("spends exactly the machine: server and load generator together use every core", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 100, max: 200_000 }),
        fc.integer({ min: 0, max: 500 }),
        (cores, rate, load) => {
          const budget = budgetAt({ cores, targetRate: rate, loadGeneratorUs: load, processes: 1 });
          const used = (budget.allThreadsUs + load) * rate;
          // Either the cores are spent exactly or the load generator alone takes more than them.
          if (budget.allThreadsUs > 0) expect(used).toBeCloseTo(cores * 1e6, 3);
          else expect(load * rate).toBeGreaterThanOrEqual(cores * 1e6);
          expect(budget.eventLoopUs * rate).toBeCloseTo(1e6, 6);
        },
      ),
    );
  });

  it("refuses a budget without cores, rate or processes", () => {
    expect(() => budgetAt({ cores: 0, targetRate: 1, loadGeneratorUs: 0, processes: 1 })).toThrow(/invariant/);
    expect(() => budgetAt({ cores: 2, targetRate: 0, loadGeneratorUs: 0, processes: 1 })).toThrow(/invariant/);
    expect(() => budgetAt({ cores: 2, targetRate: 1, loadGeneratorUs: 0, processes: 0 })).toThrow(/invariant/);
  });
});

describe("verdict", () => {
  const budget = { allThreadsUs: 100, eventLoopUs: 50 };
  it("fits only within both limits, and names what is over and by how much", () => {
    expect(verdict(budget, 100, 50)).toBe("fits");
    expect(verdict(budget, 130, 50)).toBe("over: CPU +30");
    expect(verdict(budget, 100, 61)).toBe("over: event loop +11");
    expect(verdict(budget, 101, 51)).toBe("over: CPU +1, event loop +1");
  });
});
