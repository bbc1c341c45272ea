// SQLite group commit: many requests share a commit, and a failing request rolls back only itself.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_BATCH } from "../../src/store/groupCommit.ts";
import { insertSettingOnce, readSetting } from "../../src/store/settings.ts";
import { openStore, SQLITE_PAGE_CACHE_KIB, type Store } from "../../src/store/store.ts";
import { createTestDatabase, type TestDatabase } from "../support/server.ts";

let database: TestDatabase;
let store: Store;
beforeAll(async () => {
  // Always SQLite: group commit is how the embedded store stays durable and fast.
  database = await createTestDatabase("sqlite");
  store = await openStore(database.url);
});
afterAll(async () => {
  await store.close();
  await database.drop();
});

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `done()` holds, polling, for at most 5 s (a loaded CI machine may take its time). */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  for (let waited = 0; waited < 5000; waited += 5) {
    if (await done()) return;
    await tick(5);
  }
  throw new Error("condition not reached within 5 s");
}

/** A store on the test database whose WAL fsyncs wait, one gate each, while `hold(n)` says so for the nth. */
async function openGatedStore(hold: (sync: number) => boolean) {
  const gates: (() => void)[] = [];
  let syncs = 0;
  let holding = true;
  const gated = await openStore(database.url, {
    walSync: async (sync) => {
      syncs++;
      if (holding && hold(syncs)) await new Promise<void>((resolve) => gates.push(resolve));
      await sync();
    },
  });
  return {
    store: gated,
    syncs: () => syncs,
    releaseOne: () => gates.shift()?.(),
    close: async () => {
      holding = false;
      for (const open of gates.splice(0)) open();
      await gated.close();
    },
  };
}

describe("group commit", () => {
  it("commits every concurrent request, and rolls back only the one that failed", async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        store.transaction(async (tx) => {
          await insertSettingOnce(tx, `k${i}`, `v${i}`);
          await insertSettingOnce(tx, `k${i}-second`, "x");
          if (i % 7 === 3) throw new Error(`request ${i} fails`);
          return i;
        }),
      ),
    );
    for (const [i, result] of results.entries()) {
      if (i % 7 === 3) {
        expect(result.status).toBe("rejected");
        expect(await readSetting(store, `k${i}`)).toBeNull();
        expect(await readSetting(store, `k${i}-second`)).toBeNull();
      } else {
        expect(result).toEqual({ status: "fulfilled", value: i });
        expect(await readSetting(store, `k${i}`)).toBe(`v${i}`);
      }
    }
  });

  it("lets a later request of the same batch see an earlier one's writes", async () => {
    const [first, second] = await Promise.all([
      store.transaction((tx) => insertSettingOnce(tx, "shared", "first")),
      store.transaction((tx) => insertSettingOnce(tx, "shared", "second")),
    ]);
    expect([first, second].sort()).toEqual([false, true]);
    expect(await readSetting(store, "shared")).toBe(first ? "first" : "second");
  });

  it("is durable: answered writes are visible to a new connection", async () => {
    await store.transaction((tx) => insertSettingOnce(tx, "durable", "yes"));
    const other = await openStore(database.url);
    try {
      expect(await readSetting(other, "durable")).toBe("yes");
    } finally {
      await other.close();
    }
  });

  it("runs on WAL, committing without fsync (the barrier fsyncs), and is durable once synced", async () => {
    const { sql } = await import("kysely");
    const sync = await sql<{ synchronous: number }>`pragma synchronous`.execute(store.db);
    const journal = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(store.db);
    expect(sync.rows[0]?.synchronous).toBe(1);
    expect(journal.rows[0]?.journal_mode).toBe("wal");
    await store.transaction((tx) => insertSettingOnce(tx, "synced", "yes"));
    expect(store.durable()).toBeNull();
  });

  it("keeps the requests' savepoint journals in memory, never in temporary files", async () => {
    // temp_store = MEMORY (2) on the writing connection, which batches run on.
    const tempStore = await store.transaction(async (tx) => tx.sqlite?.pragma("temp_store", { simple: true }));
    expect(tempStore).toBe(2);
  });

  it("bounds each connection's page cache (better-sqlite3 builds SQLite with 16 MiB a connection)", async () => {
    const { sql } = await import("kysely");
    const reader = await sql<{ cache_size: number }>`pragma cache_size`.execute(store.db);
    const writer = await store.transaction(async (tx) => tx.sqlite?.pragma("cache_size", { simple: true }));
    expect(reader.rows[0]?.cache_size).toBe(-SQLITE_PAGE_CACHE_KIB);
    expect(writer).toBe(-SQLITE_PAGE_CACHE_KIB);
    expect(SQLITE_PAGE_CACHE_KIB).toBeLessThanOrEqual(2048);
  });

  it("answers a transaction only once the WAL fsync after its commit completed", async () => {
    const gated = await openGatedStore(() => true);
    try {
      let answered = false;
      const answer = gated.store
        .transaction((tx) => insertSettingOnce(tx, "gated", "yes"))
        .then((value) => {
          answered = true;
          return value;
        });
      // Committed (another connection sees it) but not on disk yet: not answered, and answers wait.
      await until(async () => (await readSetting(store, "gated")) === "yes");
      expect(answered).toBe(false);
      expect(gated.store.durable()).not.toBeNull();
      gated.releaseOne();
      expect(await answer).toBe(true);
      expect(gated.store.durable()).toBeNull();
      expect(gated.syncs()).toBe(1);
    } finally {
      await gated.close();
    }
  });

  it("keeps the next batch open while an fsync runs, and commits what arrived meanwhile once it is over", async () => {
    const gated = await openGatedStore((sync) => sync === 1);
    try {
      const first = gated.store.transaction((tx) => insertSettingOnce(tx, "open-1", "a"));
      await until(async () => (await readSetting(store, "open-1")) === "a" && gated.syncs() === 1);
      // The first commit's fsync is held: later requests join one batch that stays open.
      const later = [2, 3, 4].map((i) => gated.store.transaction((tx) => insertSettingOnce(tx, `open-${i}`, "b")));
      await tick(30);
      for (const i of [2, 3, 4]) expect(await readSetting(store, `open-${i}`)).toBeNull();
      gated.releaseOne();
      expect(await first).toBe(true);
      expect(await Promise.all(later)).toEqual([true, true, true]);
      for (const i of [2, 3, 4]) expect(await readSetting(store, `open-${i}`)).toBe("b");
      // One commit for the three, hence one more fsync.
      expect(gated.syncs()).toBe(2);
      expect(gated.store.durable()).toBeNull();
    } finally {
      await gated.close();
    }
  });

  it("does not hold a batch behind a running fsync when another is already queued to cover it", async () => {
    const gated = await openGatedStore(() => true);
    try {
      const first = gated.store.transaction((tx) => insertSettingOnce(tx, "q-first", "1"));
      await until(() => gated.syncs() === 1);
      // A full batch commits even while the first fsync runs, and queues the next fsync.
      const full = Array.from({ length: MAX_BATCH }, (_, i) =>
        gated.store.transaction((tx) => insertSettingOnce(tx, `q-full-${i}`, "1")),
      );
      await until(async () => (await readSetting(store, `q-full-${MAX_BATCH - 1}`)) === "1");
      const last = gated.store.transaction((tx) => insertSettingOnce(tx, "q-last", "1"));
      let lastAnswered = false;
      void last.then(() => {
        lastAnswered = true;
      });
      await until(async () => (await readSetting(store, "q-last")) === "1");
      gated.releaseOne();
      await until(() => gated.syncs() === 2);
      gated.releaseOne();
      // Answered by the queued (second) fsync, which started after it committed: no third one.
      await until(() => lastAnswered || gated.syncs() > 2);
      expect(lastAnswered).toBe(true);
      expect(gated.syncs()).toBe(2);
      await Promise.all([first, ...full, last]);
    } finally {
      await gated.close();
    }
  });

  it("refuses transactions once the store is closing, and closes its files even after a lost fsync", async () => {
    const closing = await openStore(database.url);
    await closing.close();
    await expect(closing.transaction((tx) => insertSettingOnce(tx, "after-close", "x"))).rejects.toThrow(
      "the store is closed",
    );

    const lost = await openStore(database.url, {
      walSync: async () => {
        throw new Error("EIO: fsync failed");
      },
      onDurabilityLost: () => {},
    });
    await expect(lost.transaction((tx) => insertSettingOnce(tx, "lost-close", "x"))).rejects.toThrow("EIO");
    await expect(lost.close()).rejects.toThrow("EIO");
    await expect(lost.ping()).rejects.toThrow("the store is closed");
  });

  it("fails the batch whose fsync failed and every transaction after it, reporting the loss once", async () => {
    const lost: unknown[] = [];
    let syncs = 0;
    const failing = await openStore(database.url, {
      walSync: async () => {
        syncs++;
        throw new Error("EIO: fsync failed");
      },
      onDurabilityLost: (error) => lost.push(error),
    });
    try {
      await expect(failing.transaction((tx) => insertSettingOnce(tx, "unsynced", "?"))).rejects.toThrow("EIO");
      // A later fsync could succeed without the dropped pages: nothing is called durable again.
      await expect(failing.transaction((tx) => insertSettingOnce(tx, "after-loss", "?"))).rejects.toThrow("EIO");
      await expect(failing.durable()).rejects.toThrow("EIO");
      expect(syncs).toBe(1);
      expect(lost).toHaveLength(1);
    } finally {
      await failing.close().catch(() => {});
    }
  });
});

describe("checkpoints", () => {
  it("copies committed pages into the database file from the worker thread, not on commit", async () => {
    const { statSync } = await import("node:fs");
    const { sqlitePath } = await import("../../src/store/store.ts");
    const { sql } = await import("kysely");
    // The writing connection (a transaction's) never checkpoints by itself.
    const autocheckpoint = await store.transaction((tx) =>
      sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(tx.db),
    );
    expect(autocheckpoint.rows[0]?.wal_autocheckpoint).toBe(0);
    const file = sqlitePath(database.url);
    const before = statSync(file).size;
    // About 2 MiB of committed rows: they reach the database file only through checkpoints.
    const big = "x".repeat(4000);
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          store.transaction((tx) => insertSettingOnce(tx, `big-${round}-${i}`, big)),
        ),
      );
    }
    const deadline = Date.now() + 5000;
    while (statSync(file).size < before + 1_000_000 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(statSync(file).size).toBeGreaterThan(before + 1_000_000);
  });

  it("starts the WAL again from its beginning under steady writes, so that it stays short", async () => {
    const { statSync } = await import("node:fs");
    const { sqlitePath } = await import("../../src/store/store.ts");
    const restartFrames = 64;
    const steady = await openStore(database.url, { walRestartFrames: restartFrames });
    try {
      const wal = `${sqlitePath(database.url)}-wal`;
      const big = "x".repeat(4000);
      let written = 0;
      let longest = 0;
      // Four writers that never pause: the committer always has a batch to run, so the checkpoint
      // worker never finds every frame copied on its own (which is when SQLite restarts a WAL).
      await Promise.all(
        Array.from({ length: 4 }, async (_, writer) => {
          for (let i = 0; i < 2500; i++) {
            await steady.transaction((tx) => insertSettingOnce(tx, `steady-${writer}-${i}`, big));
            written += 4096;
            longest = Math.max(longest, statSync(wal).size);
          }
        }),
      );
      // ~41 MiB went through the WAL (without restarts it would hold all of it). It restarts at the
      // first checkpoint tick (every 50 ms) after 64 frames, so it holds about what one tick's
      // interval writes: 3–6 MiB on a fast machine, ~11 MiB seen with the machine's cores contended,
      // ~21 MiB once with every core busy with other test runs; the bound only tells restarts from none.
      expect(written).toBeGreaterThan(40_000_000);
      expect(longest).toBeLessThan((written * 3) / 4);
      expect(await readSetting(steady, "steady-3-2499")).toBe(big);
    } finally {
      await steady.close();
    }
  });
});

describe("checkpoint worker", () => {
  it("reports a worker that ended without being stopped, and only that", async () => {
    const { startCheckpointer } = await import("../../src/store/checkpointer.ts");
    const { sqlitePath } = await import("../../src/store/store.ts");
    const lost: string[] = [];
    const errors: string[] = [];
    const crashed = startCheckpointer(sqlitePath(database.url), {
      onError: (m) => errors.push(m),
      onLost: () => lost.push("crashed"),
    });
    await crashed.kill();
    const stopped = startCheckpointer(sqlitePath(database.url), {
      onError: (m) => errors.push(m),
      onLost: () => lost.push("stopped"),
    });
    await stopped.stop();
    expect(lost).toEqual(["crashed"]);
    expect(errors).toEqual([]);
  });
});
