// `npm run bench`: the real service on a fresh store, loaded from another process, compared round by round with floors that do only what the operation must (and a bare node:http ceiling).
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import canonicalize from "canonicalize";
import pg from "pg";
import { type LoadResult, type LoadSpec, signedHeaders } from "./load.ts";

const ROOT = join(import.meta.dirname, "..");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? "3");
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? "5");
// 32 connections: durable writes wait for an fsync, so throughput needs requests in flight to share it
// (group commit); with 10 a batch can never hold more than 10 (docs/performance.md).
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? "32");
/** The node flags of `npm start`, so that the bench measures the service as it is started. */
const START_FLAGS = (
  JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } }
).scripts.start
  .split(" ")
  .filter((word) => word.startsWith("--"));
/** BENCH_PROCESSES: how many service processes (and floor processes) share the load; PostgreSQL only beyond one. */
const PROCESSES_GIVEN = process.env.BENCH_PROCESSES ? Number(process.env.BENCH_PROCESSES) : undefined;
/** The process counts of the scaling shape (PostgreSQL). */
const SCALING_PROCESSES = [1, 2, 4];
const ADMIN_TOKEN = `bench-${randomBytes(12).toString("hex")}`;
const SECRET_ENCRYPTION_KEY = randomBytes(32).toString("hex");

/**
 * The targets of every operation: service ÷ floor in the same rounds and p99 at CONNECTIONS, by
 * store (PostgreSQL's from product §32; SQLite's are those it met before, which must not fall), and
 * the peak RSS of a service process on both (§32).
 */
interface Targets {
  floorRatio: number;
  p99Ms: number;
}
const TARGETS: Record<"sqlite" | "postgres", Targets> = {
  sqlite: { floorRatio: 0.6, p99Ms: 50 },
  postgres: { floorRatio: 0.8, p99Ms: 25 },
};
const TARGET_PEAK_RSS_MIB = 150;

interface Scenario {
  name: string;
  spec: (base: string) => Omit<LoadSpec, "durationS" | "connections" | "url">;
}

interface Started {
  child: ChildProcess;
  port: number;
}

function tsxNode(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

async function freePort(): Promise<number> {
  const { createServer } = await import("node:net");
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return typeof address === "object" && address ? address.port : 0;
}

async function waitReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`process exited:\n${output()}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not yet listening
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`not ready: ${url}\n${output()}`);
}

async function startService(databaseUrl: string): Promise<Started> {
  const port = await freePort();
  // The built service, as `npm start` runs it (npm run bench builds it first), with the V8 flags of
  // that script (docs/performance.md, "Memory"). BENCH_SERVICE_ARGS adds node flags for
  // investigation (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
  const extra = (process.env.BENCH_SERVICE_ARGS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...START_FLAGS, ...extra, "dist/main.js"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: "127.0.0.1",
      ADMIN_TOKEN,
      SECRET_ENCRYPTION_KEY,
      RATE_LIMIT_PER_MINUTE: "0",
      ADMIN_RATE_LIMIT_PER_MINUTE: "0",
      PAYER_RATE_LIMIT_PER_MINUTE: "0",
      WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "warn",
      SERVICE_MODE: "sandbox",
      NODE_ENV: "production",
    },
  });
  let output = "";
  child.stdout?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  await waitReady(`http://127.0.0.1:${port}/healthz`, child, () => output);
  return { child, port };
}

async function startCeiling(getBytes: number, postBytes: number): Promise<Started> {
  const port = await freePort();
  const child = tsxNode(["bench/ceiling.ts"], {
    PORT: String(port),
    CEILING_GET_BYTES: String(getBytes),
    CEILING_POST_BYTES: String(postBytes),
  });
  await waitReady(`http://127.0.0.1:${port}/`, child, () => "");
  return { child, port };
}

/**
 * The stack floor (bench/floor.ts), deployed like the service: as many processes, the same V8
 * flags, the same store.
 */
async function startFloors(
  count: number,
  sizes: { getBytes: number; postBytes: number },
  databaseUrl: string,
  secret: string,
  kind: "stack" | "data",
): Promise<Started[]> {
  const floors: Started[] = [];
  // One after the other: the first creates the floor's table.
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", ...START_FLAGS, "bench/floor.ts"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        PORT: String(port),
        FLOOR_GET_BYTES: String(sizes.getBytes),
        FLOOR_POST_BYTES: String(sizes.postBytes),
        FLOOR_SECRET: secret,
        FLOOR_KIND: kind,
        DATABASE_URL: databaseUrl.startsWith("postgres") ? databaseUrl : "",
      },
    });
    let output = "";
    child.stderr?.on("data", (c: Buffer) => {
      output += c.toString();
    });
    await waitReady(`http://127.0.0.1:${port}/public/v1/invoices/1`, child, () => output);
    floors.push({ child, port });
  }
  return floors;
}

async function stop(started: Started): Promise<void> {
  if (started.child.exitCode !== null) return;
  const exited = new Promise((resolve) => started.child.once("exit", resolve));
  started.child.kill("SIGTERM");
  await exited;
}

/** Runs autocannon in its own process against every URL at once, splitting the connections. */
async function load(spec: Omit<LoadSpec, "url"> & { urls: string[] }): Promise<LoadResult> {
  const perUrl = Math.max(1, Math.floor(spec.connections / spec.urls.length));
  const results = await Promise.all(
    spec.urls.map(
      (url) =>
        new Promise<LoadResult>((resolve, reject) => {
          const child = tsxNode(
            ["bench/load.ts", JSON.stringify({ ...spec, url: `${url}${spec.path}`, connections: perUrl })],
            {},
          );
          let out = "";
          let err = "";
          child.stdout?.on("data", (c: Buffer) => {
            out += c.toString();
          });
          child.stderr?.on("data", (c: Buffer) => {
            err += c.toString();
          });
          child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out) as LoadResult) : reject(new Error(err))));
        }),
    ),
  );
  return {
    requestsPerSecond: results.reduce((s, r) => s + r.requestsPerSecond, 0),
    p50Ms: Math.max(...results.map((r) => r.p50Ms)),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    non2xx: results.reduce((s, r) => s + r.non2xx, 0),
    errors: results.reduce((s, r) => s + r.errors, 0),
    total: results.reduce((s, r) => s + r.total, 0),
    cpuMs: results.reduce((s, r) => s + r.cpuMs, 0),
  };
}

/** CPU time (user + system, every thread) a process has used so far, from /proc; 0 once it is gone. */
function cpuMsOf(pid: number): number {
  try {
    // The fields after the command name, which may itself hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the file, in clock ticks of 10 ms on Linux.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * CPU ms per thread (the main thread as "main", others by name and id) and the bytes the process
 * has written to storage so far, from /proc: the event loop is the service's bottleneck, and the
 * bytes written per request (WAL, checkpoints) are its write amplification, neither as noisy as a
 * throughput on a shared machine.
 */
function threadsOf(pid: number): { cpu: Map<string, number>; writeBytes: number } {
  const cpu = new Map<string, number>();
  let writeBytes = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = Number(tid) === pid ? "main" : `${stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))}#${tid}`;
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      cpu.set(name, (Number(fields[11]) + Number(fields[12])) * 10);
    }
    writeBytes = Number(/write_bytes:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, "utf8"))?.[1] ?? "0");
  } catch {
    // the process is gone
  }
  return { cpu, writeBytes };
}

/** What a set of processes used between two readings, per request: main-thread CPU µs, written bytes. */
function perRequest(
  before: ReturnType<typeof threadsOf>[],
  after: ReturnType<typeof threadsOf>[],
  requests: number,
): { mainUs: number; writtenBytes: number; detail: string } {
  const n = Math.max(1, requests);
  let mainMs = 0;
  let written = 0;
  const detail: string[] = [];
  after.forEach((a, i) => {
    const b = before[i];
    mainMs += (a.cpu.get("main") ?? 0) - (b?.cpu.get("main") ?? 0);
    written += a.writeBytes - (b?.writeBytes ?? 0);
    for (const [name, ms] of a.cpu) {
      const used = ms - (b?.cpu.get(name) ?? 0);
      if (used > 0) detail.push(`${name}=${((1000 * used) / n).toFixed(1)}`);
    }
  });
  return { mainUs: (1000 * mainMs) / n, writtenBytes: written / n, detail: detail.join(" ") };
}

/**
 * The PostgreSQL server's processes on this machine (the postmaster, its backends and workers):
 * on PostgreSQL part of every operation's CPU is theirs, and it shares the machine's cores.
 */
function databaseServerPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "postgres") pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * Runs a load and reads what the given processes used meanwhile, per request (CPU in µs), and on
 * PostgreSQL what every process of the database server used, its background workers (WAL writer,
 * checkpointer, autovacuum) included, since they work for the load on the same cores.
 */
async function measured(
  processes: Started[],
  work: () => Promise<LoadResult>,
  onPostgres = false,
): Promise<{
  result: LoadResult;
  cpuUs: number;
  databaseUs: number;
  mainUs: number;
  writtenBytes: number;
  detail: string;
}> {
  const pids = processes.map((p) => p.child.pid ?? 0);
  const serverPids = onPostgres ? databaseServerPids() : [];
  const cpuBefore = pids.reduce((sum, pid) => sum + cpuMsOf(pid), 0);
  const serverBefore = serverPids.map(cpuMsOf);
  const threadsBefore = pids.map(threadsOf);
  const result = await work();
  const cpuUsed = pids.reduce((sum, pid) => sum + cpuMsOf(pid), 0) - cpuBefore;
  // A backend that ended during the load reads 0 afterwards: count nothing for it rather than less than nothing.
  const serverUsed =
    serverPids.reduce((sum, pid, i) => sum + Math.max(0, cpuMsOf(pid) - (serverBefore[i] ?? 0)), 0) +
    // Backends a pool opened during the load: all they used is the load's.
    (onPostgres ? databaseServerPids().filter((pid) => !serverPids.includes(pid)) : []).reduce(
      (sum, pid) => sum + cpuMsOf(pid),
      0,
    );
  const usage = perRequest(threadsBefore, pids.map(threadsOf), result.total);
  const n = Math.max(1, result.total);
  return { result, cpuUs: (1000 * cpuUsed) / n, databaseUs: (1000 * serverUsed) / n, ...usage };
}

/** The load generator's own CPU µs per request it sent. */
function loadGeneratorUs(result: LoadResult): number {
  return (1000 * result.cpuMs) / Math.max(1, result.total);
}

function rssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0");
    return kb / 1024;
  } catch {
    return 0;
  }
}

async function json(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return { body: JSON.parse(text) as any, bytes: Buffer.byteLength(text) };
}

/** What a script reads at the end: one line per operation. */
interface Verdict {
  operation: string;
  floorRatio: number;
  p99Ms: number;
}

/**
 * The service alone with 1, 2 and 4 processes on the bench's database, for each operation one round:
 * where adding processes stops helping on this machine.
 */
async function scalingShape(
  databaseUrl: string,
  scenarios: Scenario[],
  base: string,
  running: Started[],
): Promise<string[]> {
  const cells = new Map<string, string[]>();
  // The bench's own processes are reused as the first ones, and more are started as needed.
  const started: Started[] = [];
  try {
    for (const count of SCALING_PROCESSES) {
      while (running.length + started.length < count) started.push(await startService(databaseUrl));
      const processes = [...running, ...started].slice(0, count);
      for (const scenario of scenarios) {
        const spec = scenario.spec(base);
        const urls = processes.map((p) => `http://127.0.0.1:${p.port}`);
        // A process just started runs cold (no JIT, empty caches): one unmeasured second first.
        await load({ ...spec, urls, durationS: 1, connections: CONNECTIONS });
        const m = await measured(
          processes,
          () =>
            load({
              ...spec,
              urls: processes.map((p) => `http://127.0.0.1:${p.port}`),
              durationS: DURATION_S,
              connections: CONNECTIONS,
            }),
          true,
        );
        if (m.result.non2xx + m.result.errors > 0) throw new Error(`${scenario.name}: non-2xx in the scaling runs`);
        const row = cells.get(scenario.name) ?? [];
        row.push(
          `${m.result.requestsPerSecond.toFixed(0)} req/s, p99 ${m.result.p99Ms} ms, ${m.cpuUs.toFixed(0)} + ${m.databaseUs.toFixed(0)} µs`,
        );
        cells.set(scenario.name, row);
        process.stdout.write(`  scaling ${scenario.name}, ${count}: ${row.at(-1)}\n`);
      }
    }
  } finally {
    for (const s of started) await stop(s);
  }
  return [...cells].map(([name, row]) => `| ${name} | ${row.join(" | ")} |`);
}

/** One floor's figures over the rounds of a scenario. */
interface FloorMeasures {
  rounds: number[];
  ratios: number[];
  cpu: number[];
  main: number[];
  written: number[];
  /** On PostgreSQL: the database server's CPU µs per request, beside the floor's own. */
  database: number[];
  p99Ms: number[];
}

function floorMeasures(): FloorMeasures {
  return { rounds: [], ratios: [], cpu: [], main: [], written: [], database: [], p99Ms: [] };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const given = process.env.DATABASE_URL;
  if (!given?.startsWith("postgres")) {
    const dir = mkdtempSync(join(tmpdir(), "payments-bench-"));
    return { url: `sqlite:${join(dir, "bench.db")}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `payments_bench_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: given });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(given);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: given });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** The service reads SQLITE_SYNCHRONOUS from the environment the bench passes through. */
const synchronous = process.env.SQLITE_SYNCHRONOUS === "NORMAL" ? "NORMAL" : "FULL";

async function main(): Promise<void> {
  const database = await freshDatabase();
  const onPostgres = database.url.startsWith("postgres");
  const targetsOf = TARGETS[onPostgres ? "postgres" : "sqlite"];
  // PostgreSQL is measured with two service processes behind the load, as deployed; SQLite serves one.
  const services: Started[] = [];
  for (let i = 0; i < (PROCESSES_GIVEN ?? (onPostgres ? 2 : 1)); i++) services.push(await startService(database.url));
  const bases = services.map((s) => `http://127.0.0.1:${s.port}`);
  const base = bases[0] ?? "";
  const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };

  try {
    const merchant = (await json(base, "POST", "/admin/v1/merchants", adminHeaders, { email: "bench@example.com" }))
      .body;
    const key = (await json(base, "POST", `/admin/v1/merchants/${merchant.id}/api-keys`, adminHeaders, {})).body;
    await json(base, "POST", `/admin/v1/merchants/${merchant.id}/balance-adjustments`, adminHeaders, {
      currency: "USDT",
      amount: "1000000000",
      memo: "benchmark funds",
    });
    const method = (
      await json(base, "POST", `/admin/v1/merchants/${merchant.id}/withdrawal-methods`, adminHeaders, {
        currency: "USDT",
        address: "0xbench",
      })
    ).body;
    const merchantHeaders = { "x-api-key": key.apiKey as string };
    const invoiceBody = { currency: "USDT", amount: "25.5", order_no: "bench-order", description: "benchmark" };
    const invoice = await json(base, "POST", "/public/v1/invoices/create", merchantHeaders, invoiceBody);

    const scenarios: Scenario[] = [
      {
        name: "GetInvoice",
        spec: () => ({ method: "GET", path: `/public/v1/invoices/${invoice.body.id}`, headers: merchantHeaders }),
      },
      {
        name: "CreateInvoice",
        spec: () => ({
          method: "POST",
          path: "/public/v1/invoices/create",
          headers: { ...merchantHeaders, "content-type": "application/json" },
          body: invoiceBody,
        }),
      },
      {
        name: "CreateWithdrawal (signed)",
        spec: () => ({
          method: "POST",
          path: "/public/v1/withdrawals/create",
          headers: { ...merchantHeaders, "content-type": "application/json" },
          body: { currency: "USDT", amount: "10", withdrawalMethodId: method.id },
          signWith: key.secretKey as string,
        }),
      },
    ];

    const rows: string[] = [];
    const cpuRows: string[] = [];
    const ceilingRows: string[] = [];
    const verdicts: Verdict[] = [];
    const loadBefore = loadavg()
      .map((l) => l.toFixed(2))
      .join(", ");
    let peakRss = 0;
    // BENCH_ONLY (a name prefix) runs one scenario, for investigation; the written table then lacks the others.
    const only = process.env.BENCH_ONLY;
    for (const scenario of scenarios.filter((s) => !only || s.name.startsWith(only))) {
      const spec = scenario.spec(base);
      // One request to learn the answer's size, so the ceiling answers with as many bytes.
      const probe = await load({ ...spec, urls: [base], durationS: 1, connections: 1 });
      if (probe.non2xx > 0 || probe.total === 0) throw new Error(`${scenario.name}: the probe got non-2xx answers`);
      const headers = spec.signWith ? signedHeaders(spec, spec.signWith, canonicalize(spec.body) ?? "") : spec.headers;
      const sample = (await json(base, spec.method, spec.path, headers, spec.body)).bytes;
      const ceiling = await startCeiling(sample, sample);
      const floors = await startFloors(
        services.length,
        { getBytes: sample, postBytes: sample },
        database.url,
        key.secretKey as string,
        "stack",
      );
      // The data floor writes what an operation stores; a read has nothing more to write than the stack floor.
      const dataFloors =
        spec.method === "POST"
          ? await startFloors(
              services.length,
              { getBytes: sample, postBytes: sample },
              database.url,
              key.secretKey as string,
              "data",
            )
          : [];
      // Every server of the round warmed up alike (JIT, caches, pools) before anything is measured.
      for (const urls of [
        [`http://127.0.0.1:${ceiling.port}`],
        bases,
        ...[floors, dataFloors].filter((f) => f.length > 0).map((f) => f.map((p) => `http://127.0.0.1:${p.port}`)),
      ]) {
        await load({ ...spec, urls, durationS: 1, connections: CONNECTIONS });
      }
      const ratios: number[] = [];
      const targets: LoadResult[] = [];
      const ceilings: LoadResult[] = [];
      const stackFloor = floorMeasures();
      const dataFloor = floorMeasures();
      const cpu = {
        service: [] as number[],
        serviceMain: [] as number[],
        written: [] as number[],
        load: [] as number[],
        serviceDatabase: [] as number[],
        ceilingServer: [] as number[],
        ceilingLoad: [] as number[],
      };
      try {
        for (let round = 0; round < ROUNDS; round++) {
          const common = { ...spec, durationS: DURATION_S, connections: CONNECTIONS };
          const runCeiling = async () => {
            const m = await measured([ceiling], () => load({ ...common, urls: [`http://127.0.0.1:${ceiling.port}`] }));
            cpu.ceilingServer.push(m.cpuUs);
            cpu.ceilingLoad.push(loadGeneratorUs(m.result));
            return m.result;
          };
          const runFloor = async (processes: Started[], into: FloorMeasures, name: string) => {
            if (processes.length === 0) return;
            const m = await measured(
              processes,
              () => load({ ...common, urls: processes.map((f) => `http://127.0.0.1:${f.port}`) }),
              onPostgres,
            );
            // A floor is only a measure if it did the work: every answer a 2xx.
            if (m.result.non2xx + m.result.errors > 0 || m.result.total === 0) {
              throw new Error(
                `${scenario.name}: the ${name} answered ${m.result.non2xx} non-2xx, ${m.result.errors} errors`,
              );
            }
            into.rounds.push(m.result.requestsPerSecond);
            into.p99Ms.push(m.result.p99Ms);
            into.cpu.push(m.cpuUs);
            into.database.push(m.databaseUs);
            into.main.push(m.mainUs);
            into.written.push(m.writtenBytes);
          };
          const runFloors = async (order: "stack first" | "data first") => {
            const stack = () => runFloor(floors, stackFloor, "stack floor");
            const data = () => runFloor(dataFloors, dataFloor, "data floor");
            if (order === "stack first") {
              await stack();
              await data();
            } else {
              await data();
              await stack();
            }
          };
          const runTarget = async () => {
            let peak = 0;
            const timer = setInterval(() => {
              for (const s of services) peak = Math.max(peak, rssMiB(s.child.pid ?? 0));
            }, 200);
            try {
              const m = await measured(services, () => load({ ...common, urls: bases }), onPostgres);
              cpu.service.push(m.cpuUs);
              cpu.serviceDatabase.push(m.databaseUs);
              cpu.serviceMain.push(m.mainUs);
              cpu.written.push(m.writtenBytes);
              cpu.load.push(loadGeneratorUs(m.result));
              // BENCH_THREADS prints every thread's share, for investigation.
              if (process.env.BENCH_THREADS) {
                process.stdout.write(
                  `  service CPU µs per request by thread: ${m.detail}; ${m.result.requestsPerSecond.toFixed(0)} req/s\n`,
                );
              }
              return m.result;
            } finally {
              clearInterval(timer);
              peakRss = Math.max(peakRss, peak);
            }
          };
          // Alternate the order, so drift on a shared machine does not favour one side.
          let c: LoadResult;
          let t: LoadResult;
          if (round % 2 === 0) {
            c = await runCeiling();
            await runFloors("stack first");
            t = await runTarget();
          } else {
            t = await runTarget();
            await runFloors("data first");
            c = await runCeiling();
          }
          ceilings.push(c);
          targets.push(t);
          ratios.push(t.requestsPerSecond / c.requestsPerSecond);
          stackFloor.ratios.push((stackFloor.rounds.at(-1) ?? 0) / c.requestsPerSecond);
          if (dataFloors.length > 0) dataFloor.ratios.push((dataFloor.rounds.at(-1) ?? 0) / c.requestsPerSecond);
        }
      } finally {
        await stop(ceiling);
        for (const f of [...floors, ...dataFloors]) await stop(f);
      }
      // The floor an operation is held to: the data floor for a write, the stack floor for a read.
      const floor = dataFloors.length > 0 ? dataFloor : stackFloor;
      const floorRatios = targets.map((t, i) => t.requestsPerSecond / Math.max(1, floor.rounds[i] ?? 0));
      const result: Verdict = {
        operation: scenario.name,
        floorRatio: median(floorRatios),
        p99Ms: median(targets.map((t) => t.p99Ms)),
      };
      verdicts.push(result);
      const cpuCell = (m: { cpu: number[]; main: number[]; database: number[] }) =>
        m.cpu.length === 0
          ? "—"
          : `${median(m.cpu).toFixed(0)} (${median(m.main).toFixed(0)})${onPostgres ? ` + ${median(m.database).toFixed(0)}` : ""}`;
      const ok = meets(result, targetsOf);
      rows.push(
        `| ${scenario.name} | ${median(targets.map((t) => t.requestsPerSecond)).toFixed(0)} | ${median(floor.rounds).toFixed(0)} (${dataFloors.length > 0 ? "data" : "stack"}) | **${result.floorRatio.toFixed(2)}** (${floorRatios.map((r) => r.toFixed(2)).join(", ")}) | ${median(targets.map((t) => t.p50Ms))} | **${result.p99Ms}** (${median(floor.p99Ms)}) | ${ok ? "✓" : "✗"} | ${targets.reduce((s, t) => s + t.non2xx + t.errors, 0)} |`,
      );
      cpuRows.push(
        `| ${scenario.name} | ${cpuCell({ cpu: cpu.service, main: cpu.serviceMain, database: cpu.serviceDatabase })} | ${cpuCell(dataFloor)} | ${cpuCell(stackFloor)} | ${(median(cpu.written) / 1024).toFixed(1)} / ${dataFloors.length > 0 ? (median(dataFloor.written) / 1024).toFixed(1) : "—"} / ${(median(stackFloor.written) / 1024).toFixed(1)} | ${median(cpu.load).toFixed(0)} |`,
      );
      ceilingRows.push(
        `| ${scenario.name} | ${median(ceilings.map((c) => c.requestsPerSecond)).toFixed(0)} | ${median(ratios).toFixed(2)} | ${dataFloors.length > 0 ? median(dataFloor.ratios).toFixed(2) : "—"} | ${median(stackFloor.ratios).toFixed(2)} | ${median(ceilings.map((c) => c.p99Ms))} / ${median(stackFloor.p99Ms)} / ${dataFloors.length > 0 ? median(dataFloor.p99Ms) : "—"} / ${result.p99Ms} |`,
      );
      process.stdout.write(`${rows.at(-1)}\n${cpuRows.at(-1)}\n`);
    }

    const scaling = onPostgres && (only ? process.env.BENCH_SCALING === "1" : process.env.BENCH_SCALING !== "0");
    const scalingRows = scaling
      ? await scalingShape(
          database.url,
          scenarios.filter((s) => !only || s.name.startsWith(only)),
          base,
          services,
        )
      : [];

    const machine = `${cpus()[0]?.model ?? "unknown CPU"}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
    const storeName = onPostgres
      ? `PostgreSQL (${services.length} service processes)`
      : `SQLite (synchronous=${synchronous}, ${services.length} service process${services.length === 1 ? "" : "es"})`;
    const table = [
      `Store: **${storeName}**; ${ROUNDS} rounds of ${DURATION_S} s per side, ${CONNECTIONS} connections; ceiling, stack floor, data floor and service alternating. Machine: ${machine}; load average before the run ${loadBefore}.`,
      "",
      `Targets: service ÷ floor ≥ ${targetsOf.floorRatio} in the same rounds (the data floor for a write, the stack floor for a read) and p99 ≤ ${targetsOf.p99Ms} ms.`,
      "",
      "| operation | service req/s | floor req/s | service ÷ floor, median (rounds) | p50 ms | p99 ms (the floor's) | targets met | non-2xx |",
      "| - | - | - | - | - | - | - | - |",
      ...rows,
      "",
      `Peak RSS of a service process under load: **${peakRss.toFixed(0)} MiB** (limit ${TARGET_PEAK_RSS_MIB} MiB ${peakRss <= TARGET_PEAK_RSS_MIB ? "✓" : "✗"}).`,
      "",
      `CPU µs per request, every thread of every process of the server, user and system, with the event loops' share in brackets${onPostgres ? ", and after + what the PostgreSQL server's processes used meanwhile" : ""}; KiB each wrote to storage per request${onPostgres ? " (on PostgreSQL the database server writes, not the service)" : ""}:`,
      "",
      "| operation | service | data floor | stack floor | KiB written: service / data floor / stack floor | load generator CPU µs |",
      "| - | - | - | - | - | - |",
      ...cpuRows,
      "",
      "Against a bare `node:http` server answering the same bytes (the ceiling), for scale only:",
      "",
      "| operation | ceiling req/s | service ÷ ceiling | data floor ÷ ceiling | stack floor ÷ ceiling | p99 ms: ceiling / stack floor / data floor / service |",
      "| - | - | - | - | - | - |",
      ...ceilingRows,
      ...(scalingRows.length > 0
        ? [
            "",
            `Scaling shape: the service alone with 1, 2 and ${SCALING_PROCESSES.at(-1)} processes on the same database, one round of ${DURATION_S} s each, ${CONNECTIONS} connections in all; req/s, p99 ms, and CPU µs per request of the service (Node) + the PostgreSQL server:`,
            "",
            `| operation | ${SCALING_PROCESSES.map((n) => `${n} process${n === 1 ? "" : "es"}`).join(" | ")} |`,
            `| - | ${SCALING_PROCESSES.map(() => "-").join(" | ")} |`,
            ...scalingRows,
          ]
        : []),
    ].join("\n");
    process.stdout.write(`\n${table}\n`);
    const file = join(ROOT, "docs", "performance.md");
    // NORMAL is measured only to state what durability costs: its figures go to their own section.
    const marker = onPostgres ? "postgres" : synchronous === "FULL" ? "sqlite" : "sqlite-normal";
    if (only || PROCESSES_GIVEN) {
      process.stdout.write("\nBENCH_ONLY or BENCH_PROCESSES is set: docs/performance.md is left as it was\n");
    } else {
      writeFileSync(file, updateSection(readOr(file), marker, table));
      process.stdout.write(`\nwritten to docs/performance.md (${marker} section)\n`);
    }
    // The verdict, one line per figure with its target, for a person and a script to read.
    const store = onPostgres ? "postgres" : synchronous === "FULL" ? "sqlite" : "sqlite-normal";
    process.stdout.write(`\n${verdictLines({ store, targets: targetsOf }, verdicts, peakRss).join("\n")}\n`);
  } finally {
    for (const s of services) await stop(s);
    await database.drop();
  }
}

function met(ok: boolean): string {
  return ok ? "met" : "NOT MET";
}

function meets(v: Verdict, targets: Targets): boolean {
  return v.floorRatio >= targets.floorRatio && v.p99Ms <= targets.p99Ms;
}

/**
 * Every ratio, p99 and the peak RSS beside its target with a verdict, then one overall line:
 * `<store> <operation>: service/floor <r> (target ≥ 0.8) met, p99 <ms> ms (target ≤ 25 ms) met` (the store's targets).
 */
function verdictLines(run: { store: string; targets: Targets }, verdicts: Verdict[], peakRss: number): string[] {
  const { store, targets } = run;
  const lines = verdicts.map((v) => {
    const ratio = `service/floor ${v.floorRatio.toFixed(2)} (target ≥ ${targets.floorRatio}) ${met(v.floorRatio >= targets.floorRatio)}`;
    const p99 = `p99 ${v.p99Ms} ms (target ≤ ${targets.p99Ms} ms) ${met(v.p99Ms <= targets.p99Ms)}`;
    return `${store} ${v.operation}: ${ratio}, ${p99}`;
  });
  const rssOk = peakRss <= TARGET_PEAK_RSS_MIB;
  lines.push(`${store} peak RSS: ${peakRss.toFixed(0)} MiB (target ≤ ${TARGET_PEAK_RSS_MIB} MiB) ${met(rssOk)}`);
  const all = rssOk && verdicts.every((v) => meets(v, targets));
  lines.push(`${store} verdict: ${all ? "every target met" : "a target is not met"}`);
  return lines;
}

function readOr(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "# Performance\n\nWritten by `npm run bench`; only the ratios are meaningful on a shared machine.\n";
  }
}

/** Replaces the text between this store's markers, keeping the rest of the document. */
function updateSection(document: string, marker: string, table: string): string {
  const start = `<!-- bench:${marker}:start -->`;
  const end = `<!-- bench:${marker}:end -->`;
  const section = `${start}\n${table}\n${end}`;
  const pattern = new RegExp(`${start}[\\s\\S]*?${end}`);
  return pattern.test(document) ? document.replace(pattern, section) : `${document.trimEnd()}\n\n${section}\n`;
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
