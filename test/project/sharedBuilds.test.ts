// Test files run side by side: what they serve (dist/web) is built once per run by the global setup, never by a file.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { expect, it } from "vitest";

const GLOBAL_SETUP = "test/support/buildPackages.ts";
const THIS_FILE = relative(process.cwd(), import.meta.filename);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

it("leaves building the served assets to the global setup", () => {
  // A Vite build empties its outDir first: a build in one file blanked the dashboard another file was
  // loading (CI's dashboardNetworks failure of 28 November, once files ran on two workers).
  const builders = sources("test")
    .filter((file) => file !== GLOBAL_SETUP && file !== THIS_FILE)
    .filter((file) => {
      const text = readFileSync(file, "utf8");
      return /import\s*\{[^}]*\bbuild\b[^}]*\}\s*from\s*"vite"/.test(text) || text.includes("build:web");
    });
  expect(builders).toEqual([]);
  expect(readFileSync(GLOBAL_SETUP, "utf8")).toContain("build:web");
});
