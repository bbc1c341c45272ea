// Peak RSS (product §32): the service compiled as dist/ is, started with `npm start`'s node flags, loaded with a bounded count of the bench's three operations; fails when its VmHWM passes 150 MiB.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import autocannon from "autocannon";
import canonicalize from "canonicalize";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedHeaders } from "../../bench/load.ts";
import { createTestDatabase, freePort, type TestDatabase } from "../support/server.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const LIMIT_MIB = 150;
/** Requests per operation: enough for the heap to reach its working size, bounded by count, not time. */
const REQUESTS = { get: 3000, invoice: 1500, withdrawal: 600 };
const ADMIN_TOKEN = `memory-${randomBytes(8).toString("hex")}`;

/** `npm start`'s node flags: the bound holds for the service as it is started. */
const START_FLAGS = (
  JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } }
).scripts.start
  .split(" ")
  .filter((word) => word.startsWith("--"));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

/**
 * src/ compiled file by file as `tsc -p tsconfig.build.json` does (same modules, same lazy
 * imports, linked source maps), with esbuild: tsc takes most of a minute. The folder sits beside
 * dist/, so that paths relative to a module (dist/web, node_modules) resolve alike.
 */
async function compiled(): Promise<string> {
  const out = mkdtempSync(join(ROOT, ".memtest-"));
  const result = await build({
    entryPoints: sources(join(ROOT, "src")),
    outdir: out,
    outbase: join(ROOT, "src"),
    format: "esm",
    platform: "node",
    target: "node20",
    sourcemap: "linked",
    sourcesContent: false,
    write: false,
    logLevel: "silent",
  });
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    // tsc's rewriteRelativeImportExtensions: "./x.ts" → "./x.js" (as long, so the maps stay right).
    const text = file.path.endsWith(".js")
      ? file.text.replace(/(["'])(\.\.?\/[^"'\n]+)\.ts\1/g, "$1$2.js$1")
      : file.text;
    writeFileSync(file.path, text);
  }
  return out;
}

function statusMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? "0") / 1024;
}

async function startBuilt(out: string, databaseUrl: string): Promise<{ child: ChildProcess; base: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [...START_FLAGS, join(out, "main.js")], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: "127.0.0.1",
      ADMIN_TOKEN,
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      SERVICE_MODE: "sandbox",
      NODE_ENV: "production",
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "0",
      ADMIN_RATE_LIMIT_PER_MINUTE: "0",
      PAYER_RATE_LIMIT_PER_MINUTE: "0",
      WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
      UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE: "0",
    },
  });
  let output = "";
  child.stdout?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited:\n${output}`);
    if (
      await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { child, base };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function json(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.ok, `${method} ${path}`).toBe(true);
  return (await response.json()) as Record<string, any>;
}

/** `amount` requests over 32 connections; every answer must be a 2xx. */
async function load(options: autocannon.Options & { amount: number }): Promise<void> {
  const result = await autocannon({ connections: 32, ...options });
  expect(result.non2xx + result.errors + result.timeouts, JSON.stringify(result.statusCodeStats)).toBe(0);
}

describe("peak RSS of the built service under load", () => {
  let out = "";
  let database: TestDatabase;
  let service: { child: ChildProcess; base: string } | null = null;

  beforeAll(async () => {
    [out, database] = await Promise.all([compiled(), createTestDatabase()]);
    service = await startBuilt(out, database.url);
  }, 120_000);

  afterAll(async () => {
    if (service && service.child.exitCode === null) {
      const exited = new Promise((resolve) => service?.child.once("exit", resolve));
      service.child.kill("SIGTERM");
      await exited;
    }
    await database?.drop();
    if (out) rmSync(out, { recursive: true, force: true });
  });

  it(`stays at most ${LIMIT_MIB} MiB through GetInvoice, CreateInvoice and CreateWithdrawal`, async () => {
    const { child, base } = service as { child: ChildProcess; base: string };
    const pid = child.pid ?? 0;
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const merchant = await json(base, "POST", "/admin/v1/merchants", admin, { email: "memory@example.com" });
    const key = await json(base, "POST", `/admin/v1/merchants/${merchant.id}/api-keys`, admin, {});
    await json(base, "POST", `/admin/v1/merchants/${merchant.id}/balance-adjustments`, admin, {
      currency: "USDT",
      amount: "1000000000",
      memo: "memory test funds",
    });
    const method = await json(base, "POST", `/admin/v1/merchants/${merchant.id}/withdrawal-methods`, admin, {
      currency: "USDT",
      address: "0xmemory",
    });
    const headers = { "x-api-key": key.apiKey as string, "content-type": "application/json" };
    const invoiceBody = { currency: "USDT", amount: "25.5", order_no: "memory", description: "memory test" };
    const invoice = await json(base, "POST", "/public/v1/invoices/create", headers, invoiceBody);
    const idle = statusMiB(pid, "VmRSS");

    await load({ url: `${base}/public/v1/invoices/${invoice.id}`, headers, amount: REQUESTS.get });
    const invoiceText = JSON.stringify(invoiceBody);
    await load({
      url: `${base}/public/v1/invoices/create`,
      method: "POST",
      headers,
      body: invoiceText,
      amount: REQUESTS.invoice,
    });
    const path = "/public/v1/withdrawals/create";
    const withdrawal = canonicalize({ currency: "USDT", amount: "10", withdrawalMethodId: method.id }) ?? "";
    const sign = () => signedHeaders({ path, headers }, key.secretKey as string, withdrawal);
    await load({
      url: `${base}${path}`,
      method: "POST",
      body: withdrawal,
      requests: [{ setupRequest: (request) => ({ ...request, headers: sign() }) }],
      amount: REQUESTS.withdrawal,
    });

    const peak = statusMiB(pid, "VmHWM");
    process.stdout.write(`memory bound: idle ${idle.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB\n`);
    expect(peak).toBeLessThanOrEqual(LIMIT_MIB);
  }, 120_000);
});
