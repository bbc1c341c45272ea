// TLS to PostgreSQL is asked for through DATABASE_URL's sslmode or PGSSLMODE, by the pool and the change listener alike.
import { afterEach, describe, expect, it } from "vitest";
import { prepare } from "../../src/bootstrap.ts";
import { loadConfig } from "../../src/config.ts";
import { createTestDatabase, storeKind } from "../support/server.ts";

if (storeKind() === "postgres") {
  describe("PostgreSQL TLS settings", () => {
    const saved = process.env.PGSSLMODE;
    afterEach(() => {
      if (saved === undefined) delete process.env.PGSSLMODE;
      else process.env.PGSSLMODE = saved;
    });

    /** The test server offers no TLS: a start that asks for it is refused by the server's answer, which shows TLS was asked for. */
    async function start(databaseUrl: string): Promise<string> {
      const config = loadConfig({
        DATABASE_URL: databaseUrl,
        SECRET_ENCRYPTION_KEY: "e".repeat(64),
        LOG_LEVEL: "silent",
      });
      try {
        const { ctx } = await prepare(config);
        await ctx.store.close();
        return "started";
      } catch (error) {
        return (error as Error).message;
      }
    }

    it("starts without TLS when none is asked for, and asks for it with sslmode in the URL or PGSSLMODE", async () => {
      const database = await createTestDatabase();
      try {
        delete process.env.PGSSLMODE;
        expect(await start(database.url)).toBe("started");
        const separator = database.url.includes("?") ? "&" : "?";
        for (const mode of ["verify-full", "no-verify"]) {
          expect(await start(`${database.url}${separator}sslmode=${mode}`)).toMatch(
            /cannot connect to PostgreSQL: The server does not support SSL connections/,
          );
        }
        process.env.PGSSLMODE = "verify-full";
        expect(await start(database.url)).toMatch(
          /cannot connect to PostgreSQL: The server does not support SSL connections/,
        );
        // The URL wins over the environment, as with libpq.
        expect(await start(`${database.url}${separator}sslmode=disable`)).toBe("started");
      } finally {
        delete process.env.PGSSLMODE;
        await database.drop();
      }
    }, 120_000);

    it("bounds the pool by DATABASE_POOL_SIZE", async () => {
      const database = await createTestDatabase();
      try {
        const config = loadConfig({
          DATABASE_URL: database.url,
          SECRET_ENCRYPTION_KEY: "e".repeat(64),
          DATABASE_POOL_SIZE: "2",
          LOG_LEVEL: "silent",
        });
        const { ctx } = await prepare(config);
        try {
          await Promise.all(Array.from({ length: 8 }, () => ctx.store.ping()));
          const use = ctx.store.poolUse?.();
          expect(use?.total).toBeLessThanOrEqual(2);
          expect(use?.total).toBeGreaterThan(0);
        } finally {
          await ctx.store.close();
        }
      } finally {
        await database.drop();
      }
    }, 120_000);
  });
}

if (storeKind() === "sqlite") {
  describe("PostgreSQL TLS settings and the embedded store", () => {
    it("leave SQLite alone: a PGSSLMODE in the environment does not stop its start", async () => {
      const database = await createTestDatabase();
      const saved = process.env.PGSSLMODE;
      process.env.PGSSLMODE = "verify-full";
      try {
        const config = loadConfig({
          DATABASE_URL: database.url,
          SECRET_ENCRYPTION_KEY: "e".repeat(64),
          LOG_LEVEL: "silent",
        });
        const { ctx } = await prepare(config);
        try {
          await expect(ctx.store.ping()).resolves.toBeUndefined();
          expect(ctx.store.poolUse?.()).toBeUndefined();
        } finally {
          await ctx.store.close();
        }
      } finally {
        if (saved === undefined) delete process.env.PGSSLMODE;
        else process.env.PGSSLMODE = saved;
        await database.drop();
      }
    }, 120_000);
  });
}
