// Each seed's SQLite store: a file on a memory-backed folder, copied from a template migrated once per thread, so a seed starts in microseconds rather than migrating.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore, type StoreOptions } from "../src/store/store.ts";

/**
 * How the simulation opens SQLite: no fsync (nothing survives the run anyway, and an fsync is real
 * I/O the scheduler would have to wait for), and never a pause for a WAL restart.
 */
export const SIMULATION_STORE_OPTIONS: StoreOptions = { sqliteSynchronous: "NORMAL", walRestartFrames: 1_000_000_000 };

let template: string | null = null;
const folder = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "simulation-"));
process.once("exit", () => rmSync(folder, { recursive: true, force: true }));

/** A migrated, empty store file for one seed, and how to remove it. */
export async function seedDatabase(seed: number): Promise<{ url: string; drop(): void }> {
  if (template === null) {
    const path = join(folder, "template.db");
    const store = await openStore(`sqlite:${path}`, SIMULATION_STORE_OPTIONS);
    await store.close();
    template = path;
  }
  const path = join(folder, `seed-${seed}.db`);
  copyFileSync(template, path);
  return {
    url: `sqlite:${path}`,
    drop: () => {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
    },
  };
}
