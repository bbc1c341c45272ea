// The Dockerfile's steps outside Docker (which cannot run here): build, a production-only install in a clean folder, and a start that serves.
import { type ChildProcess, execFileSync, execSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { INTERFACE_VERSION } from "../../src/http/routeHost.ts";
import { copyOf, envOf, readDockerfile, type Stage, stage } from "../support/dockerfile.ts";
import { freePort } from "../support/server.ts";

const REPO = process.cwd();
const work = mkdtempSync(join(tmpdir(), "payments-docker-steps-"));
const dirs: Record<string, string> = { context: join(work, "context") };
let service: ChildProcess | null = null;

afterAll(() => {
  service?.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
});

/** The build context: the repository's files as git sees them (tracked and new), without what .dockerignore leaves out. */
function copyContext(): void {
  const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], {
    encoding: "utf8",
  })
    .split("\0")
    .filter((f) => f !== "" && existsSync(f));
  for (const file of files) {
    mkdirSync(join(dirs.context!, dirname(file)), { recursive: true });
    cpSync(file, join(dirs.context!, file));
  }
}

/** COPY and RUN of a stage in its own folder (its WORKDIR /app); `runs` decides how each RUN is carried out. */
function carryOut(of: Stage, runs: (command: string, cwd: string) => void): void {
  const dir = join(work, of.name);
  dirs[of.name] = dir;
  mkdirSync(dir, { recursive: true });
  for (const instruction of of.instructions) {
    if (instruction.keyword === "COPY") {
      const { from, sources, destination } = copyOf(instruction);
      const base = from === undefined ? dirs.context! : dirs[from];
      if (base === undefined) throw new Error(`COPY --from=${from} before that stage`);
      for (const source of sources) {
        const path = join(base, source.replace(/^\/app\/?/, ""));
        // Docker's rules: into a folder (a destination ending in / or several sources) under the source's name, else to the destination itself.
        const intoFolder = destination.endsWith("/") || sources.length > 1;
        const target = intoFolder && source !== "." ? join(dir, destination, basename(source)) : join(dir, destination);
        cpSync(path, target, { recursive: true, verbatimSymlinks: true });
      }
    } else if (instruction.keyword === "RUN") {
      runs(instruction.args, dir);
    }
  }
}

function sh(command: string, cwd: string): void {
  execSync(command, { cwd, stdio: "inherit", env: { ...process.env, npm_config_prefer_offline: "true" } });
}

async function waitForReady(baseUrl: string, output: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (service?.exitCode !== null) throw new Error(`the service exited: ${output()}`);
    try {
      if ((await fetch(`${baseUrl}/readyz`)).ok) return;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`not ready in time: ${output()}`);
}

describe("the Dockerfile's steps", () => {
  const stages = readDockerfile();

  it("builds in one stage, installs production dependencies only in another, and runs as a non-root user", () => {
    expect(stages.map((s) => s.name)).toEqual(["toolchain", "build", "deps", "runtime"]);
    const runtime = stage(stages, "runtime");
    expect(runtime.instructions.find((i) => i.keyword === "USER")?.args).toBe("node");
    expect(runtime.instructions.find((i) => i.keyword === "HEALTHCHECK")?.args).toContain("/readyz");
    const deps = stage(stages, "deps")
      .instructions.filter((i) => i.keyword === "RUN")
      .map((i) => i.args);
    expect(deps).toEqual(["npm ci --omit=dev --no-audit --no-fund"]);
    // The image's command is the production start of package.json, without npm.
    const cmd = JSON.parse(runtime.instructions.find((i) => i.keyword === "CMD")!.args) as string[];
    const scripts = JSON.parse(readFileSync("package.json", "utf8")).scripts as Record<string, string>;
    expect(cmd.join(" ")).toBe(scripts["start:production"]);
    expect(scripts["prestart:production"]).toBeUndefined();
  });

  it("serves /public/v1/version and /readyz from a production install, and its healthcheck passes", async () => {
    copyContext();
    // build: `npm ci` is the one step not repeated (the repository's installed node_modules stand for it); `npm run build` runs.
    carryOut(stage(stages, "build"), (command, cwd) => {
      if (command.startsWith("npm ci")) symlinkSync(join(REPO, "node_modules"), join(cwd, "node_modules"));
      else sh(command, cwd);
    });
    // deps: for real, from the registry (or npm's cache): what production installs.
    carryOut(stage(stages, "deps"), sh);
    // runtime: its only RUN makes /data, which here is a folder of its own.
    const runtime = stage(stages, "runtime");
    carryOut(runtime, (command) => expect(command).toBe("mkdir /data && chown node:node /data"));
    const app = dirs.runtime!;
    for (const dev of [
      "vitest",
      "vite",
      "tsx",
      "@biomejs/biome",
      "@redocly/cli",
      "playwright-core",
      "@foundry-rs/anvil",
    ]) {
      expect(existsSync(join(app, "node_modules", dev)), dev).toBe(false);
    }
    expect(existsSync(join(app, "src"))).toBe(false);

    const env = Object.assign({}, ...runtime.instructions.filter((i) => i.keyword === "ENV").map(envOf)) as Record<
      string,
      string
    >;
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const cmd = JSON.parse(runtime.instructions.find((i) => i.keyword === "CMD")!.args) as string[];
    let output = "";
    service = spawn(cmd[0]!, cmd.slice(1), {
      cwd: app,
      env: {
        PATH: process.env.PATH ?? "",
        ...env,
        HOST: "127.0.0.1",
        PORT: String(port),
        DATABASE_URL: `sqlite:${join(work, "data", "payments.db")}`,
      },
    });
    service.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    service.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await waitForReady(baseUrl, () => output);
    const version = await fetch(`${baseUrl}/public/v1/version`);
    expect(version.status).toBe(200);
    expect(await version.json()).toBe(INTERFACE_VERSION);
    // The built front ends came along: the payer's page assets are served.
    expect((await fetch(`${baseUrl}/pay/assets/pay.js`)).status).toBe(200);
    // The HEALTHCHECK's own command, with the container's PORT.
    const check = /CMD (\[.*\])$/.exec(runtime.instructions.find((i) => i.keyword === "HEALTHCHECK")!.args)?.[1];
    const probe = JSON.parse(check!) as string[];
    execFileSync(probe[0]!, probe.slice(1), {
      env: { PATH: process.env.PATH ?? "", PORT: String(port) },
      timeout: 60_000,
    });
    expect(output).toContain("First start");
  });
});
