// The stack floor's SQLite writer in a worker thread (FLOOR_WRITER=thread): does moving the durable write off the event loop raise throughput on this machine?
//
// Plain JavaScript: a worker thread does not inherit tsx's loader on Node 20. It owns the writing
// connection; requests arrive in batches of [id, request key, body]; each batch is one transaction,
// committed without fsync, then the WAL is fdatasync'ed (FULL) before the ids are posted back, and
// what arrived meanwhile forms the next batch: the service's group commit, on its own thread.
import { closeSync, fdatasync, openSync } from "node:fs";
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

const SQLite = createRequire(import.meta.url)("better-sqlite3");
const db = new SQLite(workerData.path);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.exec(workerData.table);
const insert = db.prepare("INSERT INTO floor_writes (request_key, body, created_at) VALUES (?, ?, ?)");
const begin = db.prepare("BEGIN");
const commit = db.prepare("COMMIT");
const wal = openSync(`${workerData.path}-wal`, "r");
let queue = [];
let busy = false;

function runBatch() {
  if (busy || queue.length === 0) return;
  busy = true;
  const batch = queue;
  queue = [];
  const now = new Date().toISOString();
  begin.run();
  for (const [, key, body] of batch) insert.run(key, body, now);
  commit.run();
  const answer = (error) => {
    if (error) throw error;
    parentPort.postMessage(batch.map((request) => request[0]));
    busy = false;
    runBatch();
  };
  if (workerData.full) fdatasync(wal, answer);
  else setImmediate(answer);
}

parentPort.on("message", (requests) => {
  for (const request of requests) queue.push(request);
  runBatch();
});
process.on("exit", () => closeSync(wal));
