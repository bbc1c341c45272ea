// The size rule of the style guide: no function in src/ over 70 lines without a comment saying why, none over 120.
import { describe, expect, it } from "vitest";
import { measure } from "../../scripts/function-lengths.ts";

describe("function lengths in src/", () => {
  it("has none over 120 lines and none over 70 without a comment saying why", () => {
    const all = measure();
    expect(all.length).toBeGreaterThan(1000);
    const broken = all
      .filter((f) => f.lines > 120 || (f.lines > 70 && !f.excused))
      .map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`);
    expect(broken).toEqual([]);
  });
});
