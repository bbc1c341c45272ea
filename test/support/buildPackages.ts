// Vitest global setup: builds what the tests serve or run (the payer's page and dashboard assets, the SDK and the CLI), once per run.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmdirSync } from "node:fs";

const LOCK = "packages/.build-lock";

/** Waits for a build another project's setup started; bounded, and a stale lock is taken over. */
async function acquire(): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      mkdirSync(LOCK);
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  rmdirSync(LOCK);
  mkdirSync(LOCK);
}

/** Set in the main process once built: every project runs this setup, and the build need happen only once. */
const BUILT = "PAYMENTS_TEST_ASSETS_BUILT";

export default async function setup(): Promise<void> {
  if (process.env[BUILT] === "1") return;
  await acquire();
  try {
    if (process.env[BUILT] === "1") return;
    // A fresh clone has no dist/: the service answers 503 for pages whose assets are not built.
    execFileSync("npm", ["run", "--silent", "build:web"], { stdio: "inherit" });
    execFileSync("npm", ["run", "--silent", "build:packages"], { stdio: "inherit" });
    process.env[BUILT] = "1";
  } finally {
    rmdirSync(LOCK);
  }
}
