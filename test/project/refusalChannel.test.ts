// The use cases (src/app) refuse by one channel, a value (src/app/refusal.ts): no file under src/app makes a Problem or imports the HTTP modules that define it.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const APP = join(root, "src/app");

/** The HTTP modules that define the Problem class and its status table. */
const PROBLEM_MODULES = ["http/problem.ts", "http/errorCodes.ts"];

/** The relative specifiers a source imports (static, type-only, re-exports and dynamic imports). */
function relativeImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
    if (m[1] !== undefined) found.push(m[1]);
  }
  return found;
}

/** What in `source` (of `file`, under src/app) refuses by a Problem rather than by a value. */
function problemUses(file: string, source: string): string[] {
  const imports = relativeImports(source)
    .filter((spec) => PROBLEM_MODULES.includes(relative(join(root, "src"), resolve(dirname(file), spec))))
    .map((spec) => `imports ${spec}`);
  const made = /\bnew\s+Problem\b/.test(source) ? ["makes a Problem"] : [];
  return [...imports, ...made];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

describe("the use cases' one refusal channel", () => {
  it("the check sees a use case importing or making a Problem, however it does", () => {
    const file = join(APP, "p.ts");
    expect(problemUses(file, 'import { Problem } from "../http/problem.ts";')).toEqual(["imports ../http/problem.ts"]);
    expect(problemUses(file, 'import type { ErrorCode } from "../http/errorCodes.ts";')).toHaveLength(1);
    expect(problemUses(file, 'export { Problem } from "../http/errorCodes.ts";')).toHaveLength(1);
    expect(problemUses(join(APP, "x/p.ts"), 'const m = await import("../../http/problem.ts");')).toHaveLength(1);
    expect(problemUses(file, 'throw new Problem("not_found", "No such thing.");')).toEqual(["makes a Problem"]);
    expect(problemUses(file, 'refuse("invoice_not_found", "No invoice with this id.", "/", null);')).toEqual([]);
    expect(problemUses(file, 'import { refuse } from "./refusal.ts";')).toEqual([]);
  });

  it("no file under src/app imports the HTTP Problem or makes one", () => {
    const offenders = sourceFiles(APP).flatMap((file) =>
      problemUses(file, readFileSync(file, "utf8")).map((what) => `${relative(root, file)} ${what}`),
    );
    expect(offenders).toEqual([]);
  });
});
