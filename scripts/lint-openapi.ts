// `npm run lint:openapi`: starts the service on a scratch SQLite store, lints the document it serves, and fails on any problem.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prepare } from "../src/bootstrap.ts";
import { loadConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";
import { lintServedDocument } from "./lintOpenApi.ts";

const dir = mkdtempSync(join(tmpdir(), "payments-lint-openapi-"));
let failed = true;
try {
  const config = loadConfig({
    DATABASE_URL: `sqlite:${join(dir, "payments.db")}`,
    SECRET_ENCRYPTION_KEY: "a".repeat(64),
    ADMIN_TOKEN: "openapi-lint-admin-token",
    SERVICE_MODE: "sandbox",
    LOG_LEVEL: "silent",
    PORT: "0",
  });
  const { ctx } = await prepare(config);
  const app = await buildApp(ctx, { logger: false });
  try {
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    const problems = await lintServedDocument(address);
    for (const p of problems) process.stdout.write(`${p.severity} ${p.ruleId} ${p.pointer}: ${p.message}\n`);
    process.stdout.write(`redocly lint of ${address}/openapi.json: ${problems.length} problem(s)\n`);
    failed = problems.length > 0;
  } finally {
    await app.close();
    await ctx.store.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
