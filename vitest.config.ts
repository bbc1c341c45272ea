// Test projects: unit (pure domain and the bench's arithmetic), the same integration suite on SQLite and on PostgreSQL, and the browser tests.
import { availableParallelism } from "node:os";
import pg from "pg";
import { defineConfig } from "vitest/config";
import { browserTestFiles, chromiumFound, chromiumPath } from "./test/support/chromium.ts";

const postgresUrl =
  process.env.TEST_POSTGRES_URL ??
  (process.env.DATABASE_URL?.startsWith("postgres")
    ? process.env.DATABASE_URL
    : "postgres://postgres@127.0.0.1:5432/test");

async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query("select 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

// Projects that extend the root config evaluate it again: probe and report once per run.
const memo = globalThis as { __postgresProbe?: Promise<boolean> };

export default defineConfig(async () => {
  const firstEvaluation = memo.__postgresProbe === undefined;
  memo.__postgresProbe ??= postgresReachable(postgresUrl);
  const withPostgres = await memo.__postgresProbe;
  if (!withPostgres && process.env.REQUIRE_POSTGRES === "1") {
    throw new Error(`REQUIRE_POSTGRES=1 but PostgreSQL is not reachable at ${postgresUrl}`);
  }
  if (!withPostgres && firstEvaluation) {
    process.stdout.write(
      `\n*** PostgreSQL is not reachable at ${postgresUrl.replace(/\/\/[^@]*@/, "//")}: the PostgreSQL integration project is SKIPPED; unit and SQLite integration tests run. ***\n\n`,
    );
  }
  // Like PostgreSQL: without a browser the files that launch one are skipped, loudly; CI sets REQUIRE_BROWSER=1.
  const browserPath = chromiumPath();
  const withBrowser = chromiumFound(browserPath);
  const needBrowser = withBrowser ? [] : browserTestFiles("test/web");
  if (!withBrowser && process.env.REQUIRE_BROWSER === "1") {
    throw new Error(`REQUIRE_BROWSER=1 but no Chromium is at ${browserPath} (set CHROMIUM_PATH)`);
  }
  if (!withBrowser && firstEvaluation) {
    process.stdout.write(
      `\n*** No Chromium at ${browserPath} (set CHROMIUM_PATH): these browser test files are SKIPPED: ${needBrowser.join(", ")}; the other tests run. ***\n\n`,
    );
  }
  const integration = (name: string, store: string) => ({
    extends: true as const,
    test: {
      name,
      include: [
        "test/http/**/*.test.ts",
        "test/store/**/*.test.ts",
        "test/workers/**/*.test.ts",
        // Live money against a local EVM node (anvil, started by each file).
        "test/chain/**/*.test.ts",
        // The SDK and the CLI against the real service (packages/*/test/integration).
        "packages/*/test/integration/**/*.test.ts",
      ],
      env: { TEST_STORE: store, TEST_POSTGRES_URL: postgresUrl },
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  });
  return {
    test: {
      // Vitest's default is one worker fewer than the cores: one on CI's two, where most of a file's
      // time is spent waiting (on anvil, spawned services, PostgreSQL, polls), so files ran one after
      // another. Two workers at least, whatever the machine.
      maxWorkers: Math.max(2, availableParallelism() - 1),
      // Builds packages/sdk and packages/cli once: the CLI tests run the built executable.
      globalSetup: ["test/support/buildPackages.ts"],
      projects: [
        {
          extends: true as const,
          test: {
            name: "unit",
            include: [
              "test/domain/**/*.test.ts",
              "test/bench/**/*.test.ts",
              "test/project/**/*.test.ts",
              "test/simulation/**/*.test.ts",
              "packages/*/test/unit/**/*.test.ts",
            ],
            // Whole-tree checks (function lengths parse all of src/) take seconds on a loaded machine: a bound, not a speed test.
            testTimeout: 60_000,
          },
        },
        integration("sqlite", "sqlite"),
        // The payer's page and the dashboard in headless Chromium, on SQLite; their assets are built once first.
        {
          extends: true as const,
          test: {
            name: "web",
            include: ["test/web/**/*.test.ts"],
            exclude: needBrowser,
            env: { TEST_STORE: "sqlite" },
            testTimeout: 120_000,
            hookTimeout: 120_000,
          },
        },
        ...(withPostgres ? [integration("postgres", "postgres")] : []),
      ],
    },
  };
});
