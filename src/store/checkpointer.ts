// SQLite WAL checkpoints in a worker thread, so that the writing connection never checkpoints (and never fsyncs) on the event loop.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** How often the worker copies committed WAL frames into the database file. */
export const CHECKPOINT_INTERVAL_MS = 50;

// CommonJS source run with `eval`: it needs no loader and no build step, under tsx, vitest or node.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.sqliteModule);
const db = new Database(workerData.path);
// Never wait: a checkpoint that finds a lock taken simply comes again at the next tick.
db.pragma("busy_timeout = 0");
let timer = null;
let lastReport = 0;
function tick() {
  try {
    // PASSIVE blocks neither the writer nor readers; under synchronous=NORMAL it fsyncs the WAL before
    // copying and the database file after, here, off the service's event loop.
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch (error) {
    // A lasting failure is reported at most once a minute, not at every tick.
    if (error.code !== "SQLITE_BUSY" && error.code !== "SQLITE_LOCKED" && Date.now() - lastReport > 60000) {
      lastReport = Date.now();
      parentPort.postMessage({ error: String(error) });
    }
  }
  timer = setTimeout(tick, workerData.intervalMs);
}
parentPort.on("message", (message) => {
  if (message !== "stop") return;
  clearTimeout(timer);
  try { db.pragma("wal_checkpoint(PASSIVE)"); } catch {}
  db.close();
  parentPort.close();
});
tick();
`;

export interface Checkpointer {
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
): Checkpointer {
  const { onError, onLost } = handlers;
  let stopping = false;
  const sqliteModule = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { path, sqliteModule, intervalMs },
    // A checkpoint needs almost no JavaScript heap; keep the thread's footprint small.
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
  });
  worker.on("message", (message: { error?: string }) => {
    if (message.error) onError(message.error);
  });
  worker.on("error", (error) => onError(String(error)));
  // Checkpointing never keeps the process alive.
  worker.unref();
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      if (!stopping) onLost();
      resolve();
    }),
  );
  return {
    async stop() {
      stopping = true;
      worker.postMessage("stop");
      await exited;
    },
    async kill() {
      await worker.terminate();
      await exited;
    },
  };
}
