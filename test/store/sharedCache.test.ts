// PostgreSQL's read cache on its own: what it keeps, what drops it, and which statements count as changes.
import { describe, expect, it } from "vitest";
import { cachedTablesWritten, SharedReadCache } from "../../src/store/sharedCache.ts";

function listening(ttlMs = 60_000): SharedReadCache {
  const cache = new SharedReadCache(10, ttlMs);
  cache.setListening(true);
  return cache;
}

describe("SharedReadCache", () => {
  it("keeps nothing and serves nothing while its listener is not listening", () => {
    const cache = new SharedReadCache();
    cache.set("merchants", "m", { id: "m" }, cache.ticket("merchants"));
    expect(cache.get("merchants", "m")).toBeUndefined();
    cache.setListening(true);
    cache.set("merchants", "m", { id: "m" }, cache.ticket("merchants"));
    expect(cache.get("merchants", "m")).toEqual({ id: "m" });
    cache.setListening(false);
    expect(cache.get("merchants", "m")).toBeUndefined();
  });

  it("drops a key on its notice, and a fill whose read began before the notice", () => {
    const cache = listening();
    cache.set("api_keys", "k", { id: 1 }, cache.ticket("api_keys"));
    const ticket = cache.ticket("api_keys");
    cache.noticed("api_keys:k");
    expect(cache.get("api_keys", "k")).toBeUndefined();
    cache.set("api_keys", "k", { id: 1 }, ticket);
    expect(cache.get("api_keys", "k")).toBeUndefined();
    // Another table's fill is not disturbed.
    cache.set("merchants", "m", { id: "m" }, cache.ticket("merchants"));
    expect(cache.get("merchants", "m")).toEqual({ id: "m" });
  });

  it("keeps no fill of a table this process is writing, until the write ends", () => {
    const cache = listening();
    cache.set("merchants", "m", { status: "active" }, cache.ticket("merchants"));
    cache.writing(["merchants"]);
    expect(cache.get("merchants", "m")).toBeUndefined();
    cache.set("merchants", "m", { status: "active" }, cache.ticket("merchants"));
    expect(cache.get("merchants", "m")).toBeUndefined();
    const before = cache.ticket("merchants");
    cache.ended(["merchants"]);
    cache.set("merchants", "m", { status: "active" }, before);
    expect(cache.get("merchants", "m")).toBeUndefined();
    cache.set("merchants", "m", { status: "suspended" }, cache.ticket("merchants"));
    expect(cache.get("merchants", "m")).toEqual({ status: "suspended" });
  });

  it("drops every invoice when a currency changes, and everything on a notice it cannot read", () => {
    const cache = listening();
    cache.set("invoices", "i", { id: "i" }, cache.ticket("invoices"));
    cache.noticed("currencies:USDT");
    expect(cache.get("invoices", "i")).toBeUndefined();
    cache.set("merchants", "m", { id: "m" }, cache.ticket("merchants"));
    cache.noticed("garbage");
    expect(cache.get("merchants", "m")).toBeUndefined();
  });

  it("serves no entry beyond its TTL", async () => {
    const cache = listening(20);
    cache.set("currencies", "USDT", { ticker: "USDT" }, cache.ticket("currencies"));
    expect(cache.get("currencies", "USDT")).toEqual({ ticker: "USDT" });
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(cache.get("currencies", "USDT")).toBeUndefined();
  });

  it("holds at most its limit per table, dropping the oldest", () => {
    const cache = listening();
    for (let i = 0; i < 11; i++) cache.set("invoices", `i${i}`, { i }, cache.ticket("invoices"));
    expect(cache.size("invoices")).toBe(10);
    expect(cache.get("invoices", "i0")).toBeUndefined();
    expect(cache.get("invoices", "i10")).toEqual({ i: 10 });
  });
});

describe("cachedTablesWritten", () => {
  it("names the cached tables a statement changes, and no plain insert", () => {
    // A key's last-used time is not cached: writing it (once a minute per key) drops nothing.
    expect(cachedTablesWritten('update "api_keys" set "last_used_at" = $1 where "id" = $2')).toEqual([]);
    expect(
      cachedTablesWritten('update "api_keys" set "last_used_at" = $1, "last_used_from" = $2 where "id" = $3'),
    ).toEqual([]);
    expect(cachedTablesWritten('update "api_keys" set "last_used_at" = $1, "revoked_at" = $2 where "id" = $3')).toEqual(
      ["api_keys"],
    );
    expect(cachedTablesWritten('update "api_keys" set "revoked_at" = $1 where "id" = $2')).toEqual(["api_keys"]);
    expect(cachedTablesWritten('/* prepared */ insert into "invoices" ("id") values ($1)')).toEqual([]);
    expect(cachedTablesWritten('insert into "invoice_payments" ("id") values ($1)')).toEqual(["invoices"]);
    expect(
      cachedTablesWritten(
        'insert into "currencies" ("ticker") values ($1) on conflict ("ticker") do update set "x" = 1',
      ),
    ).toEqual(["currency_entries", "currencies", "invoices"]);
    // A new catalog entry joins its currency's group: the cached groups go, and nothing else.
    expect(cachedTablesWritten('insert into "currencies" ("ticker") values ($1)')).toEqual(["currency_entries"]);
    expect(cachedTablesWritten('delete from "withdrawal_methods" where "id" = $1')).toEqual(["withdrawal_methods"]);
    expect(cachedTablesWritten('select * from "merchants" where "id" = $1 for update')).toEqual([]);
    expect(cachedTablesWritten("select * from accept_withdrawals($1::jsonb)")).toEqual([]);
  });
});
