// Vitest global setup: builds the SDK and the CLI (tsc) before the tests that run them, once per run.
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

export default async function setup(): Promise<void> {
  await acquire();
  try {
    execFileSync("npm", ["run", "--silent", "build:packages"], { stdio: "inherit" });
  } finally {
    rmdirSync(LOCK);
  }
}
