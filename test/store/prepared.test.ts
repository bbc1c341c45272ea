// Prepared queries: compiled once, run with new values, same answers as the builder.
import { sql } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import { findCurrency, seedCatalog } from "../../src/store/currencies.ts";
import { preparedQuery } from "../../src/store/prepared.ts";
import { insertSettingOnce } from "../../src/store/settings.ts";
import { openStore } from "../../src/store/store.ts";
import { useTestServer } from "../support/fixture.ts";
import { createTestDatabase, storeKind } from "../support/server.ts";

const server = useTestServer();
beforeAll(async () => {
  for (const [key, value] of [
    ["p1", "one"],
    ["p2", "two"],
    ["p3", "three"],
  ]) {
    await server.ctx.store.transaction((tx) => insertSettingOnce(tx, key as string, value as string));
  }
});

describe("preparedQuery", () => {
  const settingsBetween = preparedQuery(["from", "to"] as const, (db, args) =>
    db
      .selectFrom("settings")
      .select(["key", "value"])
      .where("key", ">=", args.from)
      .where("key", "<=", args.to)
      // A constant parameter of the query stays as it was compiled.
      .where("value", "!=", "never")
      .orderBy("key"),
  );

  it("answers like the builder, with each call's own values", async () => {
    expect(await settingsBetween(server.ctx.store, { from: "p1", to: "p2" })).toEqual([
      { key: "p1", value: "one" },
      { key: "p2", value: "two" },
    ]);
    expect(await settingsBetween(server.ctx.store, { from: "p3", to: "p3" })).toEqual([{ key: "p3", value: "three" }]);
    const direct = await server.ctx.store.db
      .selectFrom("settings")
      .select(["key", "value"])
      .where("key", ">=", "p2")
      .where("key", "<=", "p3")
      .orderBy("key")
      .execute();
    expect(await settingsBetween(server.ctx.store, { from: "p2", to: "p3" })).toEqual(direct);
  });

  it("runs inside a transaction and sees its writes", async () => {
    const seen = await server.ctx.store.transaction(async (tx) => {
      await insertSettingOnce(tx, "p25", "in-tx");
      return settingsBetween(tx, { from: "p2", to: "p3" });
    });
    expect(seen.map((r) => r.key)).toEqual(["p2", "p25", "p3"]);
  });

  it("refuses a query that ignores one of its arguments", async () => {
    const broken = preparedQuery(["used", "unused"] as const, (db, args) =>
      db.selectFrom("settings").select("key").where("key", "=", args.used),
    );
    await expect(broken(server.ctx.store, { used: "p1", unused: "x" })).rejects.toThrow(/ignores argument unused/);
  });
});

// PostgreSQL only (registered only there, not skipped elsewhere): prepared queries are named statements, planned once per connection.
if (storeKind() === "postgres") {
  describe("named statements on PostgreSQL", () => {
    it("recover after a migration changes a table: each connection fails at most once, then prepares afresh", async () => {
      const database = await createTestDatabase("postgres");
      const store = await openStore(database.url, { poolSize: 3 });
      try {
        await store.transaction((tx) => seedCatalog(tx));
        // Every pooled connection prepares the statement.
        await Promise.all(Array.from({ length: 6 }, () => findCurrency(store, "USDT")));
        await store.transaction((tx) => sql`alter table currencies add column extra text`.execute(tx.db));
        let failures = 0;
        for (let i = 0; i < 12; i++) {
          try {
            expect((await findCurrency(store, "USDT"))?.ticker).toBe("USDT");
          } catch {
            failures++;
          }
        }
        expect(failures).toBeLessThanOrEqual(3);
        for (let i = 0; i < 6; i++) expect((await findCurrency(store, "USDT"))?.ticker).toBe("USDT");
      } finally {
        await store.close();
        await database.drop();
      }
    });
  });
}
