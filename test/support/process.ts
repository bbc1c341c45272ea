// Runs the real service as a child process (`node --import tsx src/main.ts`), as `npm start` does, and reads its output.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { freePort, type TestServer } from "./server.ts";

export interface ServiceProcess {
  child: ChildProcessWithoutNullStreams;
  baseUrl: string;
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

const ROOT = join(import.meta.dirname, "..", "..");

/** The service ended (by exit code or by a signal) before it answered `/readyz`. */
export class ServiceExitedEarly extends Error {
  constructor(
    readonly code: number | null,
    readonly signal: NodeJS.Signals | null,
    output: string,
  ) {
    super(`service exited early (code ${code}, signal ${signal}):\n${output}`);
  }
}

export async function spawnService(
  env: Record<string, string>,
  port: number,
  // Generous: on a loaded 2-core machine a start through tsx has taken 40 s.
  readyTimeoutMs = 180_000,
): Promise<ServiceProcess> {
  // `node --import tsx`, not the tsx CLI: the CLI runs the service in a grandchild that SIGKILL would orphan.
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "src", "main.ts")], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: String(port), HOST: "127.0.0.1", ...env },
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    // A process killed by a signal has no exit code: both say it is gone.
    if (child.exitCode !== null || child.signalCode !== null)
      throw new ServiceExitedEarly(child.exitCode, child.signalCode, output);
    try {
      const response = await fetch(`${baseUrl}/readyz`);
      if (response.ok) return { child, baseUrl, output: () => output, exited, stop };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`service did not become ready:\n${output}`);
}

/** A second service process configured like `server` (same database, sealing key and admin token). */
export async function spawnServiceLike(server: TestServer, env: Record<string, string> = {}): Promise<ServiceProcess> {
  return spawnService(
    {
      DATABASE_URL: server.database.url,
      SECRET_ENCRYPTION_KEY: "a".repeat(64),
      ADMIN_TOKEN: server.adminToken,
      SERVICE_MODE: "sandbox",
      RATE_LIMIT_PER_MINUTE: "0",
      ADMIN_RATE_LIMIT_PER_MINUTE: "0",
      PAYER_RATE_LIMIT_PER_MINUTE: "0",
      WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
      UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "warn",
      ...env,
    },
    await freePort(),
  );
}

/**
 * Waits for `probe` to find something (non-null), looking every `everyMs` and calling `tick` (a
 * block mined, say) between looks; past `timeoutMs` it throws, naming `what`. The crash tests' one wait.
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | null>,
  options: { timeoutMs: number; tick?: () => Promise<void>; everyMs?: number },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline) {
    const found = await probe();
    if (found !== null) return found;
    await options.tick?.();
    await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}
