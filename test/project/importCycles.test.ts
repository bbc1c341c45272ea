// The import graph of src/ (type-only imports too) has no cycle: src/http/app.ts imports every surface, so a route takes the app's type from src/http/routeHost.ts, never from app.ts.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
// TypeScript 7's compiler has no JavaScript parser API; Babel's (as in scripts/function-lengths.ts) parses TypeScript.
import { parse } from "@babel/parser";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");

/** Module (path from the repository root) to the modules it imports. */
type Graph = Map<string, Set<string>>;

/**
 * The relative specifiers a source imports: `import` (type-only too), `export … from`, type-level
 * `import("…")` and dynamic `import()`; each one makes the importer depend on the module.
 */
function relativeImports(source: string): string[] {
  const found: string[] = [];
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== "object") return;
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    const n = node as Record<string, any>;
    if (/^(Import|ExportNamed|ExportAll)Declaration$/.test(n.type) && n.source) found.push(n.source.value);
    if (n.type === "TSImportType") found.push((n.argument.literal ?? n.argument).value);
    if (n.type === "CallExpression" && n.callee.type === "Import") found.push(n.arguments[0]?.value);
    if (n.type === "ImportExpression") found.push(n.source?.value);
    for (const [key, value] of Object.entries(n)) {
      if (key !== "loc" && key !== "leadingComments" && key !== "trailingComments") visit(value);
    }
  };
  visit(parse(source, { sourceType: "module", plugins: ["typescript"] }).program);
  return found.filter((spec) => typeof spec === "string" && spec.startsWith("."));
}

function importGraph(dir: string): Graph {
  const graph: Graph = new Map();
  const files = readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
  for (const file of files) {
    const targets = relativeImports(readFileSync(file, "utf8")).map((spec) =>
      relative(root, resolve(dirname(file), spec)),
    );
    graph.set(relative(root, file), new Set(targets));
  }
  return graph;
}

/** The strongly connected components with a cycle (Tarjan), each sorted: every module in one reaches every other. */
function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = stack.splice(stack.indexOf(v));
    if (component.length > 1 || graph.get(v)?.has(v)) found.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  return found.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

/** One shortest cycle through `start` inside its component, `a -> b -> … -> a`, to name in a failure. */
function shortestCycle(graph: Graph, component: string[], start: string): string {
  const inside = new Set(component);
  const before = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of graph.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(before.get(path[0]!)!);
        return [...path, start].join(" -> ");
      }
      if (!before.has(w)) {
        before.set(w, v);
        queue.push(w);
      }
    }
  }
  return start;
}

/** Every component with a module under src/http, as its size and one shortest cycle through each of its HTTP modules. */
function httpCycles(graph: Graph): string[] {
  return cycles(graph)
    .filter((component) => component.some((m) => m.startsWith("src/http/")))
    .flatMap((component) =>
      component
        .filter((m) => m.startsWith("src/http/"))
        .map((m) => `${component.length} modules: ${shortestCycle(graph, component, m)}`),
    );
}

const graphOf = (edges: Record<string, string[]>): Graph =>
  new Map(Object.entries(edges).map(([from, to]) => [from, new Set(to)]));

describe("import cycles in src/", () => {
  it("the check sees every kind of import and every cycle", () => {
    expect(relativeImports('import type { App } from "../app.ts";\nimport x from "node:fs";')).toEqual(["../app.ts"]);
    expect(relativeImports('import { type App, VERSION } from "./app.ts";')).toEqual(["./app.ts"]);
    expect(
      relativeImports('export { a } from "./a.ts";\nexport * from "./b.ts";\nexport type { C } from "./c.ts";'),
    ).toEqual(["./a.ts", "./b.ts", "./c.ts"]);
    expect(relativeImports('let a: import("./a.ts").A;\nconst b = () => import("./b.ts");')).toEqual([
      "./a.ts",
      "./b.ts",
    ]);
    expect(relativeImports('const s = "./a.ts"; // import "./b.ts"')).toEqual([]);
    const graph = graphOf({
      "src/http/app.ts": ["src/http/a/index.ts", "src/http/host.ts"],
      "src/http/a/index.ts": ["src/http/a/r.ts"],
      "src/http/a/r.ts": ["src/http/app.ts"],
      "src/http/host.ts": [],
      "src/x.ts": ["src/y.ts"],
      "src/y.ts": ["src/x.ts"],
      "src/z.ts": ["src/z.ts"],
    });
    expect(cycles(graph)).toEqual([
      ["src/http/a/index.ts", "src/http/a/r.ts", "src/http/app.ts"],
      ["src/x.ts", "src/y.ts"],
      ["src/z.ts"],
    ]);
    expect(httpCycles(graph)).toContain(
      "3 modules: src/http/app.ts -> src/http/a/index.ts -> src/http/a/r.ts -> src/http/app.ts",
    );
    expect(httpCycles(graphOf({ "src/http/app.ts": ["src/http/host.ts"], "src/http/host.ts": [] }))).toEqual([]);
  });

  const graph = importGraph("src");

  it("sees the whole tree", () => {
    expect(graph.size).toBeGreaterThan(200);
    expect(graph.get("src/main.ts")).toContain("src/http/app.ts");
    expect(graph.get("src/http/app.ts")).toContain("src/http/admin/index.ts");
  });

  it("has no cycle through any module under src/http", () => {
    expect(httpCycles(graph)).toEqual([]);
  });

  it("has src/http/app.ts imported by the composition root only: routes take src/http/routeHost.ts", () => {
    const importers = [...graph].filter(([, to]) => to.has("src/http/app.ts")).map(([from]) => from);
    expect(importers).toEqual(["src/main.ts"]);
  });

  it("has no cycle anywhere else in src/ either", () => {
    expect(cycles(graph).map((component) => shortestCycle(graph, component, component[0]!))).toEqual([]);
  });
});
