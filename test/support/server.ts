// Integration harness: a real service listening on loopback, on a fresh SQLite file or a fresh PostgreSQL database.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { ServiceContext } from "../../src/app/context.ts";
import { prepare } from "../../src/bootstrap.ts";
import type { ChainClientFactory } from "../../src/chain/clients.ts";
import { type Config, loadConfig } from "../../src/config.ts";
import { buildApp } from "../../src/http/app.ts";
import type { App } from "../../src/http/routeHost.ts";
import type { StoreOptions } from "../../src/store/store.ts";
import { startWorkers, type Workers } from "../../src/workers/index.ts";

export type StoreKind = "sqlite" | "postgres";

export function storeKind(): StoreKind {
  return process.env.TEST_STORE === "postgres" ? "postgres" : "sqlite";
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A database of its own for one test file: a temp SQLite file, or a new PostgreSQL database. */
export async function createTestDatabase(kind: StoreKind = storeKind()): Promise<TestDatabase> {
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "payments-test-"));
    return {
      url: `sqlite:${join(dir, "payments.db")}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const adminUrl = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const name = `payments_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export interface TestServer {
  baseUrl: string;
  app: App;
  ctx: ServiceContext;
  config: Config;
  adminToken: string;
  database: TestDatabase;
  /** The demo merchant of a sandbox first start. */
  demo: { merchantId: string; apiKey: string; secretKey: string; withdrawalMethodId: number };
  /** The workers of this process; their loops only tick by themselves when options.workers was true. */
  workers: Workers;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  /** Reuse a database (e.g. to restart a service on the same store). */
  database?: TestDatabase;
  /** Start the background workers as main.ts does (off by default: tests drive them with runOnce). */
  workers?: boolean;
  /** Store options (e.g. a held fsync). */
  store?: StoreOptions;
  /** How node clients are made (live mode against a local chain: short timeouts, injected faults). */
  chainClientFactory?: ChainClientFactory;
}

/** A port that was free a moment ago, so PUBLIC_BASE_URL can be known before the server listens. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase());
  const port = await freePort();
  const adminToken = `test-admin-${randomBytes(12).toString("hex")}`;
  const config = loadConfig({
    DATABASE_URL: database.url,
    ADMIN_TOKEN: adminToken,
    SECRET_ENCRYPTION_KEY: "a".repeat(64),
    PORT: String(port),
    HOST: "127.0.0.1",
    SERVICE_MODE: "sandbox",
    RATE_LIMIT_PER_MINUTE: "0",
    ADMIN_RATE_LIMIT_PER_MINUTE: "0",
    PAYER_RATE_LIMIT_PER_MINUTE: "0",
    WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
    UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE: "0",
    LOG_LEVEL: "silent",
    ...options.env,
  });
  const { ctx, firstStart } = await prepare(
    config,
    options.store,
    options.chainClientFactory ? { chainClientFactory: options.chainClientFactory } : {},
  );
  const app = await buildApp(ctx, { logger: false });
  await app.listen({ port, host: "127.0.0.1" });
  const workers = await startWorkers(ctx, app.log, { autoStart: options.workers ?? false });
  const baseUrl = `http://127.0.0.1:${port}`;
  const demo = firstStart.demo ?? { merchantId: "", apiKey: "", secretKey: "", withdrawalMethodId: 0 };
  return {
    baseUrl,
    app,
    ctx,
    config,
    adminToken,
    database,
    demo,
    workers,
    close: async () => {
      await app.close();
      await workers.stop();
      await ctx.store.close();
      if (!options.database) await database.drop();
    },
  };
}

export interface Answer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A plain HTTP call: JSON in, body parsed when it is JSON. */
export async function call<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: unknown; rawBody?: string } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | undefined;
  if (init.rawBody !== undefined) body = init.rawBody;
  else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  const contentType = response.headers.get("content-type") ?? "";
  const parsed = contentType.includes("json") && text !== "" ? JSON.parse(text) : text;
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}

/** Calls the operator API with the server's admin token. */
export function admin<T = any>(server: TestServer, method: string, path: string, body?: unknown): Promise<Answer<T>> {
  return call<T>(server.baseUrl, method, `/admin/v1${path}`, {
    headers: { authorization: `Bearer ${server.adminToken}` },
    body,
  });
}

/** Calls the public API with a merchant API key. */
export function merchant<T = any>(
  server: TestServer,
  apiKey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer<T>> {
  return call<T>(server.baseUrl, method, path, { headers: { "x-api-key": apiKey }, body });
}

/** A new merchant with one API key, through the operator API. */
export async function createMerchant(
  server: TestServer,
  fields: Record<string, unknown> = {},
): Promise<{ id: string; apiKey: string; secretKey: string }> {
  const created = await admin(server, "POST", "/merchants", {
    email: `m-${randomBytes(6).toString("hex")}@example.com`,
    ...fields,
  });
  if (created.status !== 200) throw new Error(`create merchant: ${created.status} ${created.text}`);
  const key = await admin(server, "POST", `/merchants/${created.body.id}/api-keys`, {});
  if (key.status !== 200) throw new Error(`issue key: ${key.status} ${key.text}`);
  return { id: created.body.id, apiKey: key.body.apiKey, secretKey: key.body.secretKey };
}

/** Expects an RFC 9457 body with the given status and code. */
export function expectProblem(answer: Answer, status: number, code: string): void {
  const body = answer.body as Record<string, unknown>;
  const problems: string[] = [];
  if (answer.status !== status) problems.push(`status ${answer.status} != ${status}`);
  if (!answer.headers.get("content-type")?.startsWith("application/problem+json")) {
    problems.push(`content-type ${answer.headers.get("content-type")}`);
  }
  if (typeof body !== "object" || body === null) problems.push("body is not an object");
  else {
    if (body.code !== code) problems.push(`code ${String(body.code)} != ${code}`);
    if (body.status !== status) problems.push(`body.status ${String(body.status)}`);
    for (const field of ["type", "title", "detail"]) {
      if (typeof body[field] !== "string") problems.push(`${field} missing`);
    }
  }
  if (problems.length > 0) throw new Error(`not the expected problem: ${problems.join("; ")}\n${answer.text}`);
}
