// Prepared queries: compiled once, run with new values, same answers as the builder.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { preparedQuery } from "../../src/store/prepared.ts";
import { insertSettingOnce } from "../../src/store/settings.ts";
import { startTestServer, type TestServer } from "../support/server.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
  for (const [key, value] of [
    ["p1", "one"],
    ["p2", "two"],
    ["p3", "three"],
  ]) {
    await server.ctx.store.transaction((tx) => insertSettingOnce(tx, key as string, value as string));
  }
});
afterAll(async () => {
  await server.close();
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
