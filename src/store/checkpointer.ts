// SQLite WAL checkpoints in a worker thread, so that the writing connection never checkpoints (and never fsyncs) on the event loop.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** How often the worker copies committed WAL frames into the database file. */
export const CHECKPOINT_INTERVAL_MS = 50;

/**
 * WAL length (frames) past which the worker asks the writer for a moment without commits. SQLite
 * starts the WAL again from its beginning only when a write begins with every frame checkpointed,
 * which never happens under steady load: the WAL grew by ~50 MB/s, and appending to a file costs the
 * kernel new blocks (zeroing them was a tenth of CreateInvoice's CPU). 4096 frames of 4 KiB: 16 MiB.
 */
export const WAL_RESTART_FRAMES = 4096;

/** The checkpointing connection's page cache, in KiB (better-sqlite3's default is 16 MiB). */
const CHECKPOINT_PAGE_CACHE_KIB = 512;

/** The longest the writer holds its next batch for a catch-up (the worker may be slow or gone). */
export const CATCH_UP_TIMEOUT_MS = 1000;

// CommonJS source run with `eval`: it needs no loader and no build step, under tsx, vitest or node.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.sqliteModule);
const db = new Database(workerData.path);
// Never wait: a checkpoint that finds a lock taken simply comes again at the next tick.
db.pragma("busy_timeout = 0");
// A checkpoint copies frames through its own buffer: this connection needs no large page cache.
db.pragma("cache_size = -" + workerData.pageCacheKiB);
let timer = null;
let lastReport = 0;
let lastLog = 0;
let askAt = workerData.restartFrames;
let asked = false;
// PASSIVE blocks neither the writer nor readers; under synchronous=NORMAL it fsyncs the WAL before
// copying and the database file after, here, off the service's event loop. Answers the WAL's length.
function checkpoint() {
  try {
    return db.pragma("wal_checkpoint(PASSIVE)")[0].log;
  } catch (error) {
    // A lasting failure is reported at most once a minute, not at every tick.
    if (error.code !== "SQLITE_BUSY" && error.code !== "SQLITE_LOCKED" && Date.now() - lastReport > 60000) {
      lastReport = Date.now();
      parentPort.postMessage({ error: String(error) });
    }
    return lastLog;
  }
}
function tick() {
  const log = checkpoint();
  // A shorter WAL started again from its beginning: the next restart is asked at the usual length.
  if (log < lastLog) askAt = workerData.restartFrames;
  lastLog = log;
  if (log >= askAt && !asked) {
    asked = true;
    // If this restart does not happen (a reader held on to the WAL), the next ask waits for as much again.
    askAt = log + workerData.restartFrames;
    parentPort.postMessage({ restart: log });
  }
  timer = setTimeout(tick, workerData.intervalMs);
}
parentPort.on("message", (message) => {
  if (message && message.catchUp !== undefined) {
    // The writer holds its next batch until this answers: with every frame checkpointed, that
    // batch's commit starts the WAL again from its beginning.
    lastLog = checkpoint();
    asked = false;
    parentPort.postMessage({ caughtUp: message.catchUp });
    return;
  }
  if (message !== "stop") return;
  clearTimeout(timer);
  try { db.pragma("wal_checkpoint(PASSIVE)"); } catch {}
  db.close();
  parentPort.close();
});
tick();
`;

export interface Checkpointer {
  /** The WAL has grown past its restart length: the writer should call catchUp() between batches. */
  restartWanted(): boolean;
  /**
   * Checkpoints every committed frame while the writer commits nothing, so that its next commit
   * starts the WAL from its beginning. Resolves when done, or after CATCH_UP_TIMEOUT_MS, or when
   * the worker is gone: it only ever delays a batch, boundedly.
   */
  catchUp(): Promise<void>;
  stop(): Promise<void>;
  /** Ends the worker as a crash would (tests). */
  kill(): Promise<void>;
}

/**
 * Starts the checkpointing worker for a WAL database whose writing connection has
 * `wal_autocheckpoint = 0`. `onError` hears checkpoint failures other than a busy lock; `onLost`
 * hears that the worker ended without being stopped, so the writer must checkpoint again itself
 * (else the WAL would grow without bound).
 */
export function startCheckpointer(
  path: string,
  handlers: { onError: (message: string) => void; onLost: () => void },
  intervalMs = CHECKPOINT_INTERVAL_MS,
  restartFrames = WAL_RESTART_FRAMES,
): Checkpointer {
  const { onError, onLost } = handlers;
  let stopping = false;
  let wanted = false;
  let caughtUp: (() => void) | null = null;
  let catchingUp: Promise<void> | null = null;
  // Numbers each catch-up, so that a late answer to one that timed out settles no later one.
  let catchUps = 0;
  const sqliteModule = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { path, sqliteModule, intervalMs, restartFrames, pageCacheKiB: CHECKPOINT_PAGE_CACHE_KIB },
    // A checkpoint needs almost no JavaScript heap; keep the thread's footprint small.
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
  });
  worker.on("message", (message: { error?: string; restart?: number; caughtUp?: number }) => {
    if (message.error) onError(message.error);
    if (message.restart !== undefined) wanted = true;
    if (message.caughtUp === catchUps) caughtUp?.();
  });
  worker.on("error", (error) => onError(String(error)));
  // Checkpointing never keeps the process alive.
  worker.unref();
  let gone = false;
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      gone = true;
      caughtUp?.();
      if (!stopping) onLost();
      resolve();
    }),
  );
  return {
    restartWanted: () => wanted && !gone,
    catchUp() {
      if (catchingUp) return catchingUp;
      wanted = false;
      catchingUp = new Promise<void>((resolve) => {
        // Not unref'd: a batch waits on this, and the worker (unref'd) keeps nothing alive.
        const timer = setTimeout(() => caughtUp?.(), CATCH_UP_TIMEOUT_MS);
        caughtUp = () => {
          clearTimeout(timer);
          caughtUp = null;
          catchingUp = null;
          resolve();
        };
        if (gone) caughtUp();
        else worker.postMessage({ catchUp: ++catchUps });
      });
      return catchingUp;
    },
    async stop() {
      stopping = true;
      // Whoever awaits the stop is kept alive until the worker's last checkpoint is done.
      worker.ref();
      worker.postMessage("stop");
      await exited;
    },
    async kill() {
      await worker.terminate();
      await exited;
    },
  };
}
