// A second service process (`tsx src/main.ts`) on the same database, for tests that need several processes.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort, type TestServer } from "./server.ts";

export interface ServiceProcess {
  baseUrl: string;
  stop(): Promise<void>;
}

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
}

/** Starts main.ts as its own process, configured like `server` (same database, key and admin token). */
export async function spawnService(server: TestServer, env: Record<string, string> = {}): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: server.database.url,
      SECRET_ENCRYPTION_KEY: "a".repeat(64),
      ADMIN_TOKEN: server.adminToken,
      PORT: String(port),
      HOST: "127.0.0.1",
      SERVICE_MODE: "sandbox",
      RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "error",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited(child);
  };
  // Bounded wait for readiness: 30 s in 100 ms steps.
  for (let attempt = 0; attempt < 300; attempt++) {
    if (child.exitCode !== null) break;
    try {
      const ready = await fetch(`${baseUrl}/readyz`);
      if (ready.status === 200) return { baseUrl, stop };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await stop();
  throw new Error(`service process did not become ready:\n${output}`);
}
