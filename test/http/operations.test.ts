// Operational basics: health, readiness, OpenAPI and /docs, request ids, logs without secrets, first start, SIGTERM.
import { request } from "node:http";
import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { prepare } from "../../src/bootstrap.ts";
import { loadConfig } from "../../src/config.ts";
import { buildApp } from "../../src/http/app.ts";
import { waitFor } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { spawnService } from "../support/process.ts";
import { call, createTestDatabase, freePort, startTestServer } from "../support/server.ts";

const server = useTestServer();

describe("health", () => {
  it("answers /healthz and /readyz", async () => {
    expect((await call(server.baseUrl, "GET", "/healthz")).body).toEqual({ status: "ok" });
    expect((await call(server.baseUrl, "GET", "/readyz")).body).toEqual({ status: "ready" });
  });

  it("answers 503 on /readyz when the store is gone", async () => {
    const other = await startTestServer();
    await other.ctx.store.close();
    const answer = await call(other.baseUrl, "GET", "/readyz");
    expect(answer.status).toBe(503);
    expect(answer.body.code).toBe("service_unavailable");
    await other.app.close();
    await other.database.drop();
  });
});

describe("OpenAPI", () => {
  it("documents every route the service serves, with its method", async () => {
    const answer = await call(server.baseUrl, "GET", "/openapi.json");
    expect(answer.status).toBe(200);
    const document = answer.body as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(document.openapi).toMatch(/^3\./);
    const visible = server.app.registeredRoutes.filter((r) => !r.hidden);
    expect(visible.length).toBeGreaterThan(15);
    for (const route of visible) {
      const path = route.url.replace(/:([A-Za-z_]+)/g, "{$1}");
      expect(document.paths[path], path).toBeDefined();
      expect(document.paths[path]?.[route.method.toLowerCase()], `${route.method} ${path}`).toBeDefined();
    }
    const create = document.paths["/admin/v1/merchants"]?.post as { requestBody: unknown };
    expect(JSON.stringify(create.requestBody)).toContain('"additionalProperties":false');
  });

  it("serves a readable API reference at /docs", async () => {
    const response = await fetch(`${server.baseUrl}/docs/`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/text\/html/);
    expect(await response.text()).toMatch(/swagger/i);
  });
});

describe("request ids and logs", () => {
  it("answers with a per-request id, taking a well-formed x-request-id from the caller", async () => {
    const own = await call(server.baseUrl, "GET", "/healthz");
    expect(own.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const given = await call(server.baseUrl, "GET", "/healthz", { headers: { "x-request-id": "trace-123" } });
    expect(given.headers.get("x-request-id")).toBe("trace-123");
  });

  it("logs JSON lines with the request id and never the API key, admin token or signature", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const database = await createTestDatabase();
    const config = loadConfig({
      DATABASE_URL: database.url,
      ADMIN_TOKEN: "operator-token-not-to-be-logged",
      SECRET_ENCRYPTION_KEY: "b".repeat(64),
      RATE_LIMIT_PER_MINUTE: "0",
    });
    const { ctx, firstStart } = await prepare(config);
    const logger = pino(
      {
        level: "info",
        redact: {
          paths: [
            'req.headers["x-api-key"]',
            "req.headers.authorization",
            'req.headers["x-service-request-signature"]',
          ],
          censor: "[redacted]",
        },
      },
      sink,
    );
    const app = await buildApp(ctx, { logger });
    try {
      const apiKey = firstStart.demo?.apiKey ?? "";
      await app.inject({
        method: "GET",
        url: "/public/v1/me",
        headers: { "x-api-key": apiKey, "x-request-id": "req-42" },
      });
      await app.inject({
        method: "GET",
        url: "/admin/v1/currencies",
        headers: { authorization: "Bearer operator-token-not-to-be-logged", "x-service-request-signature": "v1=abc" },
      });
      const all = lines.join("");
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      expect(lines.some((l) => JSON.parse(l).reqId === "req-42")).toBe(true);
      expect(all).not.toContain(apiKey);
      expect(all).not.toContain("operator-token-not-to-be-logged");
      expect(all).not.toContain(firstStart.demo?.secretKey ?? "never");
    } finally {
      await app.close();
      await ctx.store.close();
      await database.drop();
    }
  });
});

// Each test starts the service as a process (through tsx), which on a loaded machine takes tens of seconds.
describe("the service process", { timeout: 400_000 }, () => {
  it("prints the demo credentials and admin token once, on the first start of a new store", async () => {
    const database = await createTestDatabase();
    const env = { DATABASE_URL: database.url, SECRET_ENCRYPTION_KEY: "c".repeat(64), LOG_LEVEL: "warn" };
    try {
      const first = await spawnService(env, await freePort());
      first.child.kill("SIGTERM");
      expect(await first.exited).toBe(0);
      expect(first.output()).toMatch(/Admin token \(ADMIN_TOKEN\):\s+adm_[0-9a-f]{48}/);
      const apiKey = /Demo API key \(x-api-key\):\s+(\S+)/.exec(first.output())?.[1];
      expect(apiKey).toMatch(/^pk_/);
      expect(first.output()).toMatch(/Demo secret key \(signing\):\s+[0-9a-f]{64}/);

      const second = await spawnService(env, await freePort());
      try {
        expect(second.output()).not.toMatch(/Admin token|Demo API key/);
        const me = await fetch(`${second.baseUrl}/public/v1/me`, { headers: { "x-api-key": apiKey ?? "" } });
        expect(me.status).toBe(200);
      } finally {
        second.child.kill("SIGTERM");
        await second.exited;
      }
    } finally {
      await database.drop();
    }
  });

  it("finishes an in-flight request on SIGTERM, then exits 0", async () => {
    const database = await createTestDatabase();
    const port = await freePort();
    const service = await spawnService(
      {
        DATABASE_URL: database.url,
        SECRET_ENCRYPTION_KEY: "d".repeat(64),
        ADMIN_TOKEN: "t".repeat(32),
        // Info: the request's start is logged, which tells when it is in flight.
        LOG_LEVEL: "info",
      },
      port,
    );
    try {
      const body = JSON.stringify({ email: "inflight@example.com" });
      const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port,
            method: "POST",
            path: "/admin/v1/merchants",
            headers: {
              authorization: `Bearer ${"t".repeat(32)}`,
              "content-type": "application/json",
              "content-length": Buffer.byteLength(body),
            },
          },
          (res) => {
            let text = "";
            res.on("data", (c: Buffer) => {
              text += c.toString();
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
          },
        );
        req.on("error", reject);
        // Half the body now; SIGTERM once the service has logged the request's start (not after a
        // fixed delay, which a loaded machine can outrun); then the rest: the request is in flight.
        req.write(body.slice(0, 10));
        void waitFor(() => service.output().includes('"url":"/admin/v1/merchants"'), 120_000).then(() => {
          service.child.kill("SIGTERM");
          setTimeout(() => req.end(body.slice(10)), 300);
        }, reject);
      });
      const result = await answer;
      expect(result.status).toBe(200);
      expect(JSON.parse(result.body).email).toBe("inflight@example.com");
      expect(await service.exited).toBe(0);
    } finally {
      if (service.child.exitCode === null) service.child.kill("SIGKILL");
      await database.drop();
    }
  });
});
