// Where the browser tests find Chromium (CHROMIUM_PATH, default Debian's /usr/bin/chromium), and which test files need it.
import { accessSync, constants, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const DEFAULT_CHROMIUM_PATH = "/usr/bin/chromium";

export function chromiumPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.CHROMIUM_PATH || DEFAULT_CHROMIUM_PATH;
}

/** True when an executable file is at `path`. */
export function chromiumFound(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The test files under `dir` that launch a browser: those that import playwright-core or the
 * launcher in test/web/browser.ts. The others (the page weight) run without one.
 */
export function browserTestFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".test.ts"))
    .filter((name) => /from "(playwright-core|\.\/browser\.ts)"/.test(readFileSync(join(dir, name), "utf8")))
    .map((name) => join(dir, name))
    .sort();
}
