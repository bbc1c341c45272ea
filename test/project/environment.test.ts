// The service reads its environment at the composition root only: configuration in src/config.ts, the test hooks in src/main.ts; every other module gets what it needs passed in.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const READERS = ["src/config.ts", "src/main.ts"];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe("environment reads", () => {
  it("happen in src/config.ts and src/main.ts only (test hooks are handed to the workers, never read by them)", () => {
    const readers = sources(join(root, "src"))
      .filter((file) => /\bprocess\.env\b/.test(readFileSync(file, "utf8")))
      .map((file) => relative(root, file))
      .sort();
    expect(readers).toEqual(READERS);
  });
});
