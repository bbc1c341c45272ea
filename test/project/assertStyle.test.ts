// One assertion style in src/: broken invariants go through the domain's assert (src/domain/result.ts), nothing else words or throws them.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { assert, assertOk, err, invariantViolation, ok } from "../../src/domain/result.ts";

const HOME = "src/domain/result.ts";

function sources(): string[] {
  return readdirSync("src", { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((f) => join("src", f));
}

describe("assertion style", () => {
  it("words an invariant only in the domain's assert", () => {
    const elsewhere = sources().filter((f) => f !== HOME && readFileSync(f, "utf8").includes("invariant violated"));
    expect(elsewhere, "use assert/assertOk/invariantViolation from src/domain/result.ts").toEqual([]);
  });

  it("imports no other assertion module", () => {
    const other = /from "(node:)?assert(\/strict)?"|console\.assert\(/;
    const users = sources().filter((f) => other.test(readFileSync(f, "utf8")));
    expect(users, "use assert from src/domain/result.ts").toEqual([]);
  });

  it("throws with the same words from assert, assertOk and invariantViolation", () => {
    expect(() => assert(false, "a")).toThrow("invariant violated: a");
    expect(() => assert(1, "a")).not.toThrow();
    expect(() => assertOk(err("x_refused", "why"), "b")).toThrow("invariant violated: b (x_refused: why)");
    expect(() => assertOk(err("x_refused"), "b")).toThrow("invariant violated: b (x_refused)");
    expect(() => assertOk(ok(1), "b")).not.toThrow();
    expect(invariantViolation("c").message).toBe("invariant violated: c");
  });
});
