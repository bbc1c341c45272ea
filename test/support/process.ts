// Runs the real service as a child process (`tsx src/main.ts`), as `npm start` does, and reads its output.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";

export interface ServiceProcess {
  child: ChildProcessWithoutNullStreams;
  baseUrl: string;
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

const ROOT = join(import.meta.dirname, "..", "..");

export async function spawnService(
  env: Record<string, string>,
  port: number,
  readyTimeoutMs = 20_000,
): Promise<ServiceProcess> {
  const child = spawn(
    process.execPath,
    [join(ROOT, "node_modules", "tsx", "dist", "cli.mjs"), join(ROOT, "src", "main.ts")],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: String(port),
        HOST: "127.0.0.1",
        ...env,
      },
    },
  );
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited early:\n${output}`);
    try {
      const response = await fetch(`${baseUrl}/healthz`);
      if (response.ok) return { child, baseUrl, output: () => output, exited };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`service did not become ready:\n${output}`);
}
