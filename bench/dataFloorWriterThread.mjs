// The lean data floor's SQLite writer in a worker thread (DATA_FLOOR_MODEL=lean FLOOR_WRITER=thread): the least data a product-conform operation stores, written off the event loop.
//
// Plain JavaScript: a worker thread does not inherit tsx's loader on Node 20. It owns the writing
// connection of a store the main thread migrated and seeded (dataFloor.ts, LEAN_SCHEMA). Requests
// arrive in batches of [id, "invoice", values] or [id, "withdrawal", request key, response]; a
// batch is one transaction with a savepoint per request, committed without fsync, then the WAL is
// fdatasync'ed (FULL) before the ids are posted back, and what arrived meanwhile forms the next
// batch: the service's group commit, on its own thread.
import { closeSync, fdatasync, openSync } from "node:fs";
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

const SQLite = createRequire(import.meta.url)("better-sqlite3");
const { path, full, merchantId, account, methodId, payoutsAccount, amount, sql } = workerData;
const db = new SQLite(path);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.pragma("foreign_keys = ON");
db.pragma("temp_store = MEMORY");
const statement = {
  invoice: db.prepare(sql.invoice),
  operation: db.prepare(sql.operation),
  balance: db.prepare(sql.balance).pluck(),
  transfer: db.prepare(sql.transfer),
  debit: db.prepare(sql.debit),
  begin: db.prepare("BEGIN"),
  commit: db.prepare("COMMIT"),
  savepoint: db.prepare("SAVEPOINT request"),
  release: db.prepare("RELEASE request"),
  rollback: db.prepare("ROLLBACK TO request"),
};
const wal = openSync(`${path}-wal`, "r");
const AMOUNT = BigInt(amount);
let queue = [];
let busy = false;

function withdrawal(key, response, now) {
  const claimed = statement.operation.run(key, key, merchantId, key, response, methodId, amount, now, now);
  if (claimed.changes !== 1) throw new Error(`floor: request id ${key} repeated`);
  const balance = BigInt(statement.balance.get(account));
  if (balance < AMOUNT) throw new Error("floor: the balance ran out");
  statement.transfer.run(key, account, payoutsAccount, amount, now);
  statement.debit.run((balance - AMOUNT).toString(), now, account);
}

function runBatch() {
  if (busy || queue.length === 0) return;
  busy = true;
  const batch = queue;
  queue = [];
  const now = new Date().toISOString();
  const failed = [];
  statement.begin.run();
  for (const [id, kind, a, b] of batch) {
    statement.savepoint.run();
    try {
      if (kind === "invoice") statement.invoice.run(a);
      else withdrawal(a, b, now);
      statement.release.run();
    } catch {
      statement.rollback.run();
      statement.release.run();
      failed.push(id);
    }
  }
  statement.commit.run();
  const answer = (error) => {
    if (error) throw error;
    parentPort.postMessage({ ids: batch.map((request) => request[0]), failed });
    busy = false;
    runBatch();
  };
  if (full) fdatasync(wal, answer);
  else setImmediate(answer);
}

parentPort.on("message", (requests) => {
  for (const request of requests) queue.push(request);
  runBatch();
});
process.on("exit", () => closeSync(wal));
