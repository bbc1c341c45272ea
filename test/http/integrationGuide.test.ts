// docs/integration-guide.md followed to the letter: its marked blocks run in order (bash, node) against a real service, and what each prints is checked.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, startTestServer, type TestServer } from "../support/server.ts";

const REPOSITORY = fileURLToPath(new URL("../..", import.meta.url));
const GUIDE = join(REPOSITORY, "docs", "integration-guide.md");
/** Bound of one step; the whole guide runs in well under a minute. */
const STEP_TIMEOUT_MS = 20_000;
/** The variables section 1 of the guide has the reader export; the test gives them the real server's values. */
const GUIDE_VARIABLES = [
  "BASE_URL",
  "API_KEY",
  "SECRET_KEY",
  "WITHDRAWAL_METHOD_ID",
  "ADMIN_TOKEN",
  "CALLBACK_PORT",
] as const;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Step {
  name: string;
  language: "sh" | "js";
  /** Runs beside the following steps (a server); the run waits for its first line before going on. */
  background: boolean;
  /** A background step that must have exited before this one runs. */
  waitsFor: string | null;
  code: string;
}

/** The runnable blocks of the guide: a `<!-- guide-step: name [background] [waits-for other] -->` line, then a fenced sh or js block. */
function guideSteps(markdown: string): Step[] {
  const lines = markdown.split("\n");
  const steps: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    const marker = /^<!-- guide-step: ([a-z0-9-]+)((?: [a-z0-9-]+)*) -->$/.exec(lines[i]!);
    if (marker === null) continue;
    const words = marker[2]!.trim().split(" ").filter(Boolean);
    const fence = /^```(sh|js)$/.exec(lines[i + 1] ?? "");
    if (fence === null)
      throw new Error(`guide-step ${marker[1]}: the next line must open a \`\`\`sh or \`\`\`js block`);
    const end = lines.indexOf("```", i + 2);
    if (end === -1) throw new Error(`guide-step ${marker[1]}: unclosed block`);
    const waits = words.indexOf("waits-for");
    steps.push({
      name: marker[1]!,
      language: fence[1] as "sh" | "js",
      background: words.includes("background"),
      waitsFor: waits === -1 ? null : (words[waits + 1] ?? null),
      code: lines.slice(i + 2, end).join("\n"),
    });
    i = end;
  }
  return steps;
}

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function finished(child: ChildProcess, output: { stdout: string; stderr: string }): Promise<Outcome> {
  return new Promise((resolve) => {
    child.on("close", (code) => resolve({ code, ...output }));
  });
}

function run(command: string, args: string[], input: string, cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  const output = { stdout: "", stderr: "" };
  child.stdout!.on("data", (chunk) => {
    output.stdout += chunk;
  });
  child.stderr!.on("data", (chunk) => {
    output.stderr += chunk;
  });
  // A step that exits before reading its input would fail the run with an unhandled EPIPE (seen on a
  // loaded machine); the step is judged by its exit code and output instead.
  child.stdin!.on("error", () => {});
  child.stdin!.end(input);
  const timer = setTimeout(() => child.kill("SIGKILL"), STEP_TIMEOUT_MS);
  const done = finished(child, output).finally(() => clearTimeout(timer));
  return { child, output, done };
}

/** Reads a NUL-separated `env -0` dump into an environment. */
function parseEnv(dump: Buffer): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const entry of dump.toString("utf8").split("\0")) {
    const at = entry.indexOf("=");
    if (at > 0) env[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return env;
}

const lines = (text: string) => text.trim().split("\n");

describe("the integration guide, run against the service", () => {
  let server: TestServer;
  let work: string;
  const steps = guideSteps(readFileSync(GUIDE, "utf8"));

  beforeAll(async () => {
    // Workers run: callbacks are delivered and sandbox payouts settle by themselves, as after `npm start`.
    server = await startTestServer({ workers: true });
    work = mkdtempSync(join(tmpdir(), "payments-guide-"));
    // The examples import `canonicalize` and `@merchant-payments/sdk` as a reader's project would.
    symlinkSync(join(REPOSITORY, "node_modules"), join(work, "node_modules"));
  });

  afterAll(async () => {
    await server?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("has the steps this test checks, each once", () => {
    const names = steps.map((step) => step.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(Object.keys(EXPECTATIONS));
  });

  it("tells the reader to set exactly the variables this test gives the steps", () => {
    const markdown = readFileSync(GUIDE, "utf8");
    const block = /<!-- guide-variables -->\n```sh\n([\s\S]*?)\n```/.exec(markdown);
    expect(block, "the guide's <!-- guide-variables --> block").not.toBeNull();
    const names = [...block![1]!.matchAll(/^export ([A-Z_]+)=/gm)].map((match) => match[1]);
    expect(names.sort()).toEqual([...GUIDE_VARIABLES].sort());
  });

  it("runs every step in order and each prints what the guide says", async () => {
    const demo = server.demo;
    expect(demo.apiKey).not.toBe("");
    // Exactly the variables section 1 tells the reader to set, and a PATH to find curl, openssl and node.
    const variables: Record<(typeof GUIDE_VARIABLES)[number], string> = {
      BASE_URL: server.baseUrl,
      API_KEY: demo.apiKey,
      SECRET_KEY: demo.secretKey,
      WITHDRAWAL_METHOD_ID: String(demo.withdrawalMethodId),
      ADMIN_TOKEN: server.adminToken,
      CALLBACK_PORT: String(await freePort()),
    };
    expect(Object.keys(variables).sort()).toEqual([...GUIDE_VARIABLES].sort());
    let env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? work,
      TMPDIR: tmpdir(),
      ...variables,
    };
    const state = join(work, ".guide-state.sh");
    const envDump = join(work, ".guide-env");
    writeFileSync(state, "");
    const background = new Map<string, ReturnType<typeof run>>();

    try {
      for (const step of steps) {
        if (step.waitsFor !== null) {
          const other = background.get(step.waitsFor);
          if (other === undefined) throw new Error(`${step.name} waits for ${step.waitsFor}, which has not started`);
          const outcome = await other.done;
          expect(outcome.code, `${step.waitsFor}: ${outcome.stderr}`).toBe(0);
          EXPECTATIONS[step.waitsFor]!(outcome.stdout, { server, env });
          background.delete(step.waitsFor);
        }
        let started: ReturnType<typeof run>;
        if (step.language === "sh") {
          // Each block sees the variables and functions the blocks before it defined, as one shell session would.
          const script = `set -eu\n. '${state}'\n${step.code}\n{ export -p; declare -f; } > '${state}.next'\nenv -0 > '${envDump}'\nmv '${state}.next' '${state}'\n`;
          // From a file, so that a command reading standard input cannot swallow the rest of the script.
          const file = join(work, `.guide-${step.name}.sh`);
          writeFileSync(file, script);
          started = run("bash", [file], "", work, env);
        } else {
          started = run(process.execPath, ["--input-type=module"], step.code, work, env);
        }
        if (step.background) {
          // Go on once it is listening (its first line), or fail if it ends first.
          await new Promise<void>((resolve, reject) => {
            const check = setInterval(() => {
              if (started.output.stdout.includes("\n")) {
                clearInterval(check);
                resolve();
              }
            }, 20);
            started.done.then((outcome) => {
              clearInterval(check);
              reject(new Error(`${step.name} ended before it was ready: ${outcome.stderr}`));
            });
          });
          background.set(step.name, started);
          continue;
        }
        const outcome = await started.done;
        expect(outcome.code, `${step.name} failed:\n${outcome.stdout}\n${outcome.stderr}`).toBe(0);
        if (step.language === "sh") env = { ...parseEnv(readFileSync(envDump)) };
        EXPECTATIONS[step.name]!(outcome.stdout, { server, env });
      }
      expect([...background.keys()], "background steps nobody waited for").toEqual([]);
    } finally {
      for (const left of background.values()) left.child.kill("SIGKILL");
    }
  }, 180_000);
});

interface Context {
  server: TestServer;
  env: NodeJS.ProcessEnv;
}

/** What each step must print, in the guide's order. */
const EXPECTATIONS: Record<string, (stdout: string, context: Context) => void> = {
  helpers: (stdout) => expect(stdout).toBe(""),
  version: (stdout, { server }) => {
    const [version, ticker, me] = lines(stdout);
    expect(version).toBe('"1.0.0"');
    expect(ticker).toBe("USDT");
    expect(JSON.parse(me!)).toMatchObject({ id: server.demo.merchantId, email: "demo@merchant.test" });
  },
  "merchant-id": (stdout, { server, env }) => {
    expect(stdout.trim()).toBe(server.demo.merchantId);
    expect(env.MERCHANT_ID).toBe(server.demo.merchantId);
  },
  "cli-me": (stdout, { server }) => expect(JSON.parse(stdout)).toMatchObject({ id: server.demo.merchantId }),
  "sdk-me": (stdout) => expect(lines(stdout)).toEqual(["1.0.0", "demo@merchant.test"]),
  estimate: (stdout) =>
    expect(JSON.parse(stdout)).toEqual({
      amount: 100,
      finalPrice: 100,
      fee: 1,
      summaryFee: 2,
      merchantReceiveAmount: 98,
    }),
  "create-invoice": (stdout, { server, env }) => {
    expect(env.INVOICE_ID).toMatch(UUID);
    expect(lines(stdout)).toEqual(["pending", `${server.baseUrl}/pay/${env.INVOICE_ID}`]);
  },
  "get-invoice": (stdout, { env }) => expect(lines(stdout)).toEqual(["25.5", env.INVOICE_ID]),
  "sdk-invoice": (stdout) => expect(stdout.trim()).toBe("pending true 1"),
  "callback-secret": (stdout, { env }) => {
    expect(stdout.trim()).toBe("whsec_…");
    expect(env.CALLBACK_SECRET).toMatch(/^whsec_[A-Za-z0-9+/=]{20,}$/);
  },
  receiver: (stdout) => expect(lines(stdout)).toEqual(["listening", "invoice.completed completed 25.5"]),
  pay: (stdout) => expect(stdout.trim()).toBe("completed"),
  "verify-openssl": (stdout) => expect(stdout.trim()).toBe("signature valid"),
  "verify-sdk": (stdout) => expect(stdout.trim()).toBe("invoice.completed true"),
  withdraw: (stdout, { env }) => {
    expect(env.REQUEST_ID).toMatch(UUID);
    expect(lines(stdout)).toEqual(["processing", env.REQUEST_ID]);
  },
  "withdraw-retry": (stdout) => expect(stdout.trim()).toBe("same withdrawal"),
  "withdraw-conflict": (stdout) => expect(stdout.trim()).toBe("request_id_reused"),
  "node-withdraw": (stdout) => expect(stdout.trim()).toBe("200 processing true"),
  "sdk-withdraw": (stdout) => expect(lines(stdout)).toEqual(["processing true", "400 amount_below_minimum"]),
  refund: (stdout) =>
    expect(lines(stdout)).toEqual(["crypto", "0x1111111111111111111111111111111111111111", "refund_processing"]),
  errors: (stdout) => {
    const [problem, status] = lines(stdout);
    expect(JSON.parse(problem!)).toMatchObject({
      status: 400,
      code: "amount_too_precise",
      type: "/docs/errors#amount_too_precise",
      instance: "/public/v1/invoices/create",
    });
    expect(status).toBe("404");
  },
  extensions: (stdout) => {
    const [amount, description, failed, eventType] = lines(stdout);
    expect(amount).toBe("10");
    expect(description).toBe("A book");
    expect(failed).toBe("0");
    expect(eventType).toMatch(/^(invoice|withdrawal|refund)\.[a-z_]+$/);
  },
  "sdk-lists": (stdout) => expect(stdout.trim()).toBe("3 1 boolean"),
};
