// Start-up refuses what can never work: a SECRET_ENCRYPTION_KEY that cannot open the stored secrets, an ADMIN_TOKEN no client can send.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepare } from "../../src/bootstrap.ts";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { spawnService } from "../support/process.ts";
import { call, createTestDatabase, freePort, startTestServer, type TestDatabase } from "../support/server.ts";

const ROOT = join(import.meta.dirname, "..", "..");

/** Runs `src/main.ts` as `npm start` does and waits for it to exit on its own (bounded). */
function runToExit(env: Record<string, string>, timeoutMs = 20_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src", "main.ts")], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env },
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the service kept running instead of refusing to start:\n${output}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const RIGHT_KEY = "a".repeat(64);
const WRONG_KEY = "b".repeat(64);

// Each test starts the service as a process (through tsx), which on a loaded machine takes tens of seconds.
describe("a SECRET_ENCRYPTION_KEY that cannot open the stored secrets", { timeout: 400_000 }, () => {
  let database: TestDatabase;
  beforeAll(async () => {
    // A store with merchants, sealed under RIGHT_KEY (the test server's key).
    database = await createTestDatabase();
    const first = await startTestServer({ database });
    await first.close();
  });
  afterAll(async () => {
    await database.drop();
  });

  it("makes the service exit non-zero at start-up with a clear message", async () => {
    const { code, output } = await runToExit({
      DATABASE_URL: database.url,
      SECRET_ENCRYPTION_KEY: WRONG_KEY,
      ADMIN_TOKEN: "t".repeat(32),
      PORT: String(await freePort()),
    });
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(output).toContain(
      "configuration error: SECRET_ENCRYPTION_KEY cannot open the secrets stored in this database",
    );
  });

  it("is refused by prepare() as a ConfigError, and the right key still starts", async () => {
    const env = { DATABASE_URL: database.url, ADMIN_TOKEN: "t".repeat(32), RATE_LIMIT_PER_MINUTE: "0" };
    await expect(prepare(loadConfig({ ...env, SECRET_ENCRYPTION_KEY: WRONG_KEY }))).rejects.toThrow(ConfigError);
    const service = await spawnService({ ...env, SECRET_ENCRYPTION_KEY: RIGHT_KEY }, await freePort());
    try {
      expect((await call(service.baseUrl, "GET", "/readyz")).status).toBe(200);
    } finally {
      await service.stop();
    }
  });

  it("does not stop a new store from starting with any key", async () => {
    const fresh = await createTestDatabase();
    try {
      const service = await spawnService(
        {
          DATABASE_URL: fresh.url,
          SECRET_ENCRYPTION_KEY: WRONG_KEY,
          SERVICE_MODE: "live",
          ADMIN_TOKEN: "t".repeat(32),
        },
        await freePort(),
      );
      await service.stop();
    } finally {
      await fresh.drop();
    }
  });
});

describe("an ADMIN_TOKEN no client can send", { timeout: 400_000 }, () => {
  it("makes the service exit non-zero before it touches the store", async () => {
    const database = await createTestDatabase();
    try {
      const { code, output } = await runToExit({
        DATABASE_URL: database.url,
        SECRET_ENCRYPTION_KEY: RIGHT_KEY,
        ADMIN_TOKEN: "my operator token with spaces",
        PORT: String(await freePort()),
      });
      expect(code).toBe(1);
      expect(output).toContain("configuration error: ADMIN_TOKEN must be printable ASCII without spaces");
    } finally {
      await database.drop();
    }
  });

  it("accepts every printable character the Bearer header can carry", async () => {
    const token = `!"#$%&'()*+,-./09:;<=>?@AZ[\\]^_\`az{|}~`;
    const server = await startTestServer({ env: { ADMIN_TOKEN: token } });
    try {
      const answer = await call(server.baseUrl, "GET", "/admin/v1/currencies", {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(answer.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
