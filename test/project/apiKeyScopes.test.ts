// Every merchant route the app registers (/public/v1, /x402/v1, /sandbox/v1) is in the scope table (src/domain/apiKeyScopes.ts): no route without a scope, no scope of a route that is gone.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepare } from "../../src/bootstrap.ts";
import { loadConfig } from "../../src/config.ts";
import { API_KEY_SCOPES, ROUTE_SCOPES, routeKey, SCOPES_WITHOUT_ROUTES } from "../../src/domain/apiKeyScopes.ts";
import { buildApp } from "../../src/http/app.ts";
import type { App } from "../../src/http/routeHost.ts";

const MERCHANT_PREFIXES = /^\/(public|x402|sandbox)\/v1\//;

describe("the scope of every merchant route", () => {
  const dir = mkdtempSync(join(tmpdir(), "payments-scopes-"));
  let app: App;
  let close: () => Promise<void>;
  let document: { paths: Record<string, Record<string, { security?: unknown[] }>> };

  beforeAll(async () => {
    // Sandbox mode registers every route live mode does, and the sandbox's own.
    const config = loadConfig({
      DATABASE_URL: `sqlite:${join(dir, "payments.db")}`,
      ADMIN_TOKEN: "scope-table-token",
      SECRET_ENCRYPTION_KEY: "a".repeat(64),
      SERVICE_MODE: "sandbox",
      LOG_LEVEL: "silent",
    });
    const { ctx } = await prepare(config);
    app = await buildApp(ctx, { logger: false });
    await app.ready();
    document = app.swagger() as typeof document;
    close = async () => {
      await app.close();
      await ctx.store.close();
    };
  }, 60_000);
  afterAll(async () => {
    await close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  const merchantRoutes = () =>
    app.registeredRoutes.filter((r) => MERCHANT_PREFIXES.test(r.url)).map((r) => routeKey(r.method, r.url));

  it("names every registered route, and only those", () => {
    const registered = merchantRoutes();
    expect(registered.length).toBeGreaterThan(30);
    expect(registered.filter((key) => ROUTE_SCOPES[key] === undefined)).toEqual([]);
    expect(Object.keys(ROUTE_SCOPES).filter((key) => !registered.includes(key))).toEqual([]);
  });

  it("lets `read` make every GET, and gives every scope a route unless it waits for one", () => {
    for (const [key, access] of Object.entries(ROUTE_SCOPES)) {
      if (key.startsWith("GET ") && access !== "public") expect(access, key).toContain("read");
      if (!key.startsWith("GET ")) expect(access, key).not.toContain("read");
    }
    const used = new Set(Object.values(ROUTE_SCOPES).flatMap((access) => (access === "public" ? [] : access)));
    expect(API_KEY_SCOPES.filter((scope) => !used.has(scope))).toEqual(SCOPES_WITHOUT_ROUTES);
  });

  it("marks as public exactly the documented routes that take no API key", () => {
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const pattern = path.replace(/\{(\w+)\}/g, ":$1");
        const access = ROUTE_SCOPES[routeKey(method.toUpperCase(), pattern)];
        if (access === undefined) continue;
        expect(access === "public", `${method} ${path}`).toBe(operation.security?.length === 0);
      }
    }
  });
});
