// The switchable guards: every one on by default, one switched off at a time, and null puts them all back on.
import { afterEach, describe, expect, it } from "vitest";
import { GUARD_NAMES, GUARDS, guardOn, isGuardName, switchOffGuard } from "../../src/domain/guards.ts";

afterEach(() => switchOffGuard(null));

describe("guards", () => {
  it("lists the five guards of the money rails, each with what it protects", () => {
    expect([...GUARD_NAMES].sort()).toEqual([
      "confirmation-depth",
      "lease-token",
      "nonce-reservation",
      "payout-settlement-cas",
      "reorg-rewind",
    ]);
    for (const name of GUARD_NAMES) expect(GUARDS[name].length).toBeGreaterThan(20);
  });

  it("has every guard on by default", () => {
    for (const name of GUARD_NAMES) expect(guardOn(name)).toBe(true);
  });

  it("switches off exactly the one guard named", () => {
    for (const off of GUARD_NAMES) {
      switchOffGuard(off);
      for (const name of GUARD_NAMES) expect(guardOn(name)).toBe(name !== off);
    }
  });

  it("switches every guard back on with null", () => {
    switchOffGuard("reorg-rewind");
    switchOffGuard(null);
    for (const name of GUARD_NAMES) expect(guardOn(name)).toBe(true);
  });

  it("knows a guard's name from any other text (the runner's --mutant)", () => {
    for (const name of GUARD_NAMES) expect(isGuardName(name)).toBe(true);
    expect(isGuardName("no-such-guard")).toBe(false);
    expect(isGuardName("toString")).toBe(false);
    expect(isGuardName("")).toBe(false);
  });
});
