// Which errors mean "the database is unavailable" (503 store_unavailable) and which are the request's own.
import { describe, expect, it } from "vitest";
import { isStoreUnavailable, StoreUnavailableError } from "../../src/store/unavailable.ts";

const withCode = (code: string, message = "x") => Object.assign(new Error(message), { code });

describe("isStoreUnavailable", () => {
  it("recognises lost or refused PostgreSQL connections", () => {
    for (const code of ["57P01", "57P02", "57P03", "08006", "08003", "53300", "ECONNREFUSED", "ECONNRESET", "EPIPE"]) {
      expect(isStoreUnavailable(withCode(code)), code).toBe(true);
    }
    expect(isStoreUnavailable(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(isStoreUnavailable(new Error("Client has encountered a connection error and is not queryable"))).toBe(true);
    expect(isStoreUnavailable(new StoreUnavailableError("cannot connect", { cause: withCode("55000") }))).toBe(true);
    expect(isStoreUnavailable(new Error("wrapped", { cause: withCode("57P01") }))).toBe(true);
  });

  it("recognises a busy, failing or full SQLite file", () => {
    for (const code of [
      "SQLITE_BUSY",
      "SQLITE_BUSY_SNAPSHOT",
      "SQLITE_IOERR_WRITE",
      "SQLITE_FULL",
      "SQLITE_CANTOPEN",
    ]) {
      expect(isStoreUnavailable(withCode(code)), code).toBe(true);
    }
  });

  it("leaves a query's own errors (constraints, syntax, serialization, corruption) alone", () => {
    for (const code of [
      "23505",
      "42601",
      "40001",
      "40P01",
      "0A000",
      "SQLITE_CONSTRAINT_UNIQUE",
      "SQLITE_CORRUPT",
      "SQLITE_LOCKED",
    ]) {
      expect(isStoreUnavailable(withCode(code)), code).toBe(false);
    }
    expect(isStoreUnavailable(new Error("invariant violated"))).toBe(false);
    expect(isStoreUnavailable(undefined)).toBe(false);
    expect(isStoreUnavailable("57P01")).toBe(false);
  });
});

describe("every PostgreSQL connection the service makes listens for errors", () => {
  it("guards each pg Pool and Client created under src/ (an unheard error event ends the process)", async () => {
    const { readdirSync, readFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const root = join(import.meta.dirname, "..", "..", "src");
    const files = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    const creating = files.filter((f) => /new\s+(pg\.)?(Pool|Client)\s*\(/.test(readFileSync(join(root, f), "utf8")));
    // The store's pool at least: the scan must see something to mean anything.
    expect(creating).toContain(join("store", "store.ts"));
    for (const file of creating) {
      const text = readFileSync(join(root, file), "utf8");
      expect(
        /guardPoolConnections\(|\.on\("error"/.test(text),
        `${file} creates a pg connection without an error listener`,
      ).toBe(true);
    }
  });
});
