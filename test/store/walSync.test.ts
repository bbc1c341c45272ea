// The durability barrier: answers wait for an fsync that started after their commit, and fsyncs never pile up.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { WalSync, walFileSync } from "../../src/store/walSync.ts";

/** A fake disk: the test commits (bumps the version) and finishes each fsync by hand. */
function fakeDisk() {
  let version = 0;
  const syncs: { startedAt: number; finish: (error?: Error) => void }[] = [];
  let running = 0;
  let maxRunning = 0;
  const sync = new WalSync({
    committedVersion: () => version,
    sync: () =>
      new Promise<void>((resolve, reject) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        syncs.push({
          startedAt: version,
          finish: (error) => {
            running--;
            if (error) reject(error);
            else resolve();
          },
        });
      }),
  });
  return {
    sync,
    syncs,
    commit: () => {
      version++;
    },
    maxRunning: () => maxRunning,
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("WalSync", () => {
  it("needs no fsync while nothing was committed", () => {
    const disk = fakeDisk();
    expect(disk.sync.barrier()).toBeNull();
    expect(disk.syncs).toHaveLength(0);
  });

  it("holds a commit's waiters until an fsync that started after it completes", async () => {
    const disk = fakeDisk();
    disk.commit();
    let done = false;
    const waiting = disk.sync.barrier()?.then(() => {
      done = true;
    });
    expect(waiting).toBeDefined();
    await tick();
    expect(done).toBe(false);
    expect(disk.syncs).toHaveLength(1);
    disk.syncs[0]?.finish();
    await waiting;
    expect(done).toBe(true);
    expect(disk.sync.barrier()).toBeNull();
  });

  it("makes commits during a running fsync share one more fsync, never two at once", async () => {
    const disk = fakeDisk();
    disk.commit();
    const first = disk.sync.barrier();
    // Waiters of the same commit share the running fsync.
    expect(disk.sync.barrier()).toBe(first);
    disk.commit();
    const second = disk.sync.barrier();
    disk.commit();
    const third = disk.sync.barrier();
    expect(second).not.toBe(first);
    expect(third).toBe(second);
    let secondDone = false;
    void second?.then(() => {
      secondDone = true;
    });
    disk.syncs[0]?.finish();
    await first;
    await tick();
    expect(secondDone).toBe(false);
    expect(disk.syncs).toHaveLength(2);
    // The second fsync started after both later commits, so it covers them.
    expect(disk.syncs[1]?.startedAt).toBe(3);
    disk.syncs[1]?.finish();
    await second;
    expect(disk.sync.barrier()).toBeNull();
    expect(disk.maxRunning()).toBe(1);
  });

  it("fails the waiters of a failed fsync, and every barrier after it, without trying again", async () => {
    const disk = fakeDisk();
    disk.commit();
    const failing = disk.sync.barrier();
    disk.syncs[0]?.finish(new Error("EIO"));
    await expect(failing).rejects.toThrow("EIO");
    disk.commit();
    await expect(disk.sync.barrier()).rejects.toThrow("EIO");
    expect(disk.syncs).toHaveLength(1);
  });

  it("never runs two fsyncs at once, even when a barrier comes between one fsync and the next", async () => {
    const disk = fakeDisk();
    disk.commit();
    const first = disk.sync.barrier();
    disk.commit();
    const queued = disk.sync.barrier();
    disk.syncs[0]?.finish();
    await first;
    // The first has ended; the queued one may not have started yet: a barrier now must join it.
    disk.commit();
    const joining = disk.sync.barrier();
    await tick();
    expect(disk.maxRunning()).toBe(1);
    disk.syncs.at(-1)?.finish();
    await Promise.all([queued, joining]);
    expect(disk.maxRunning()).toBe(1);
    if (disk.sync.barrier() !== null) {
      disk.syncs.at(-1)?.finish();
    }
  });
});

describe("walFileSync", () => {
  it("fsyncs the WAL file, and follows it when the file is replaced", async () => {
    const dir = mkdtempSync(join(tmpdir(), "walsync-"));
    try {
      const path = join(dir, "x.db");
      writeFileSync(`${path}-wal`, "first");
      const file = walFileSync(path);
      await file.sync();
      rmSync(`${path}-wal`);
      writeFileSync(`${path}-wal`, "second");
      await file.sync();
      rmSync(`${path}-wal`);
      await expect(file.sync()).rejects.toThrow(/ENOENT/);
      await file.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
