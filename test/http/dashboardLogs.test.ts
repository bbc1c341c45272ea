// No session token, CSRF token, password, TOTP secret or code, API secret nor callback secret reaches a log line, even at trace level.
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ServiceContext } from "../../src/app/context.ts";
import { prepare } from "../../src/bootstrap.ts";
import { loadConfig } from "../../src/config.ts";
import { buildApp, REDACTED } from "../../src/http/app.ts";
import type { App } from "../../src/http/routeHost.ts";
import { totpNow } from "../support/dashboard.ts";
import { createTestDatabase, type TestDatabase } from "../support/server.ts";

let database: TestDatabase;
let ctx: ServiceContext;
let app: App;
const lines: string[] = [];
const ADMIN_TOKEN = "test-admin-logs-0123456789abcdef";

beforeAll(async () => {
  database = await createTestDatabase();
  const config = loadConfig({
    DATABASE_URL: database.url,
    ADMIN_TOKEN,
    SECRET_ENCRYPTION_KEY: "b".repeat(64),
    SERVICE_MODE: "sandbox",
    RATE_LIMIT_PER_MINUTE: "0",
  });
  ctx = (await prepare(config)).ctx;
  // The service's own redaction, at the most talkative level, with headers serialized too.
  const logger = pino(
    {
      level: "trace",
      redact: { paths: REDACTED, censor: "[redacted]" },
      serializers: { req: (req) => ({ method: req.method, url: req.url, headers: req.headers }) },
    },
    { write: (line: string) => lines.push(line) },
  );
  app = await buildApp(ctx, { logger });
});
afterAll(async () => {
  await app.close();
  await ctx.store.close();
  await database.drop();
});

it("logs requests without any dashboard secret", async () => {
  const password = "a very secret passphrase";
  const json = (method: "GET" | "POST", url: string, payload?: unknown, headers: Record<string, string> = {}) =>
    app.inject({
      method,
      url,
      headers: { ...headers, ...(payload === undefined ? {} : { "content-type": "application/json" }) },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    });
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const merchant = (await json("POST", "/admin/v1/merchants", { email: "logs@example.com" }, admin)).json();
  const invited = (
    await json("POST", `/admin/v1/merchants/${merchant.id}/users`, { email: "o@example.com", role: "owner" }, admin)
  ).json();
  const token = new URL(invited.inviteUrl).hash.slice("#token=".length);
  const accepted = await json("POST", "/dashboard/v1/invitations/accept", { token, password });
  expect(accepted.statusCode).toBe(200);
  const session = /dashboard_session=([^;]+)/.exec(String(accepted.headers["set-cookie"]))?.[1] as string;
  const headers = { cookie: `dashboard_session=${session}`, "x-csrf-token": accepted.json().csrfToken };
  const setup = (await json("POST", "/dashboard/v1/account/totp/setup", undefined, headers)).json();
  const code = totpNow(setup.secret);
  expect((await json("POST", "/dashboard/v1/account/totp/enable", { code }, headers)).statusCode).toBe(200);
  const key = (await json("POST", "/dashboard/v1/api-keys", undefined, headers)).json();
  expect(key.secretKey).toBeDefined();
  const revealed = (await json("POST", "/dashboard/v1/callbacks/secret/reveal", undefined, headers)).json();
  const rotated = (await json("POST", "/dashboard/v1/callbacks/secret/rotate", undefined, headers)).json();
  expect(revealed.callbackSecret).toMatch(/^whsec_/);
  expect(rotated.callbackSecret).toMatch(/^whsec_/);
  expect((await json("GET", "/dashboard/v1/session", undefined, headers)).statusCode).toBe(200);

  const log = lines.join("\n");
  expect(log).toContain("/dashboard/v1/session");
  expect(log).toContain("[redacted]");
  for (const secret of [
    session,
    accepted.json().csrfToken,
    password,
    token,
    setup.secret,
    code,
    key.secretKey,
    key.apiKey,
    revealed.callbackSecret,
    rotated.callbackSecret,
  ]) {
    expect(log).not.toContain(secret);
  }
});
