// What every process loads at start (src/main.ts's static imports, followed through src/) holds none of the packages only some processes use: they are loaded at their first use (docs/performance.md, "Memory").
import { existsSync, readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
// TypeScript 7's compiler has no JavaScript parser API; Babel's (as in importCycles.test.ts) parses TypeScript.
import { parse } from "@babel/parser";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");

/**
 * Packages a sandbox process never needs, with what loads them at first use: viem (about 16 MiB
 * of RSS) for live mode's chain work, the PostgreSQL driver on PostgreSQL, argon2 at the first password.
 */
const LOADED_AT_FIRST_USE = ["viem", "pg", "@node-rs/argon2"];

/**
 * The specifiers a module loads when it is evaluated: `import` and `export … from`, except
 * `import type` / `export type` (with verbatimModuleSyntax, `import { type A } from "x"` still loads x);
 * dynamic `import()` loads later and is not followed.
 */
function staticImports(source: string): string[] {
  const found: string[] = [];
  for (const node of parse(source, { sourceType: "module", plugins: ["typescript"] }).program.body) {
    const n = node as { type: string; importKind?: string; exportKind?: string; source?: { value: string } | null };
    if (n.type === "ImportDeclaration" && n.importKind !== "type" && n.source) found.push(n.source.value);
    if (/^Export(Named|All)Declaration$/.test(n.type) && n.exportKind !== "type" && n.source)
      found.push(n.source.value);
  }
  return found;
}

/** Each package reached from src/main.ts, with the chain of modules that loads it. */
function packagesAtStart(): Map<string, string> {
  const entry = resolve(root, "src/main.ts");
  const via = new Map<string, string>([[entry, "src/main.ts"]]);
  const packages = new Map<string, string>();
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    for (const spec of staticImports(readFileSync(file, "utf8"))) {
      if (spec.startsWith(".")) {
        const target = resolve(dirname(file), spec);
        if (via.has(target) || !existsSync(target)) continue;
        via.set(target, `${via.get(file)} > ${relative(root, target)}`);
        queue.push(target);
      } else if (!spec.startsWith("node:")) {
        const name = spec
          .split("/")
          .slice(0, spec.startsWith("@") ? 2 : 1)
          .join("/");
        if (!packages.has(name)) packages.set(name, `${via.get(file)} > ${spec}`);
      }
    }
  }
  return packages;
}

describe("modules loaded at start", () => {
  it("hold no package that only some processes use", () => {
    const packages = packagesAtStart();
    const eager = LOADED_AT_FIRST_USE.filter((name) => packages.has(name)).map((name) => packages.get(name));
    expect(eager).toEqual([]);
    // The walk itself works: what every process uses is found.
    expect(packages.has("fastify")).toBe(true);
  });
});
