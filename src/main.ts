// Entry point: loads configuration, prepares the store, serves HTTP and shuts down gracefully on SIGTERM/SIGINT.
import "dotenv/config";
import { firstStartBanner, prepare } from "./bootstrap.ts";
import { ConfigError, loadConfig } from "./config.ts";
import { screeningOffWarning } from "./domain/screening.ts";
import { buildApp } from "./http/app.ts";
import { startWorkers } from "./workers/index.ts";
import { testHooksOf } from "./workers/testHooks.ts";

async function main(): Promise<void> {
  const config = loadConfig();
  const { ctx, firstStart } = await prepare(config);
  const app = await buildApp(ctx);
  // The only place the test hooks are read: a test process asks for them in its environment.
  const workers = await startWorkers(ctx, app.log, { testHooks: testHooksOf(process.env) });
  const banner = firstStartBanner(config, firstStart);
  if (banner) process.stdout.write(`${banner}\n`);

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, "shutting down: finishing in-flight requests");
    // A bound on shutdown: requests that do not finish in time are cut off.
    const timer = setTimeout(() => {
      app.log.error("shutdown timed out");
      process.exit(1);
    }, 25_000);
    timer.unref();
    try {
      await app.close();
      await workers.stop();
      await ctx.store.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, "shutdown failed");
      process.exit(1);
    }
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  await app.listen({ port: config.port, host: config.host });
  app.log.info({ mode: config.serviceMode, store: ctx.store.dialect }, "service ready");
  const screeningOff = screeningOffWarning(config.serviceMode, ctx.screening);
  if (screeningOff !== null) app.log.warn({ screening: "off" }, screeningOff);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`configuration error: ${error.message}\n`);
  } else {
    process.stderr.write(
      `failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exit(1);
});
