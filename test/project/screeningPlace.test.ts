// Screening runs in the use cases (src/app), never in an HTTP handler: no file under src/http imports a module that screens an address.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const HTTP = join(root, "src/http");

/** The modules that screen an address (product §21): the use cases', the rules', the sources'. */
function screens(path: string): boolean {
  const rel = relative(join(root, "src"), path);
  return (
    ["app/screening.ts", "app/screenDestination.ts", "domain/screening.ts"].includes(rel) ||
    rel.startsWith("screening/")
  );
}

/** The relative specifiers a source imports (static, type-only, re-exports and dynamic imports). */
function relativeImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
    if (m[1] !== undefined) found.push(m[1]);
  }
  return found;
}

/** The imports of `file` (path under src/http) that reach a screening module. */
function screeningImports(file: string, source: string): string[] {
  return relativeImports(source).filter((spec) => screens(resolve(dirname(file), spec)));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => join(e.parentPath, e.name));
}

describe("screening lives in the use cases", () => {
  it("the check sees an HTTP file importing a screening module, however it imports it", () => {
    const file = join(HTTP, "admin/p.ts");
    expect(screeningImports(file, 'import { screenDestination } from "../../app/screenDestination.ts";')).toHaveLength(
      1,
    );
    expect(screeningImports(file, 'import type { X } from "../../domain/screening.ts";')).toHaveLength(1);
    expect(screeningImports(file, 'const m = await import("../../screening/listFile.ts");')).toHaveLength(1);
    expect(screeningImports(join(HTTP, "p.ts"), 'export { screenAddress } from "../app/screening.ts";')).toHaveLength(
      1,
    );
    expect(screeningImports(file, 'import { screeningOverview } from "../../app/screeningOverview.ts";')).toEqual([]);
    expect(screeningImports(file, 'import { registerAdminScreening } from "./screening.ts";')).toEqual([]);
  });

  it("no file under src/http imports a module that screens", () => {
    const offenders = sourceFiles(HTTP).flatMap((file) =>
      screeningImports(file, readFileSync(file, "utf8")).map((spec) => `${relative(root, file)} imports ${spec}`),
    );
    expect(offenders).toEqual([]);
  });
});
