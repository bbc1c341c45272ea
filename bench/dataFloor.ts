// The benchmark's data floor: the stack floor writing, on the service's own schema, the rows a correct invoice or withdrawal must store, and nothing more.
//
// Where the stack floor (floor.ts) writes one small row, this writes what the service's data model
// needs for the operation, with raw prepared statements and none of the service's code between the
// request and the store (no authentication, no merchant or currency lookups, no Kysely, no payout
// worker): a CreateInvoice inserts the invoice row with its four indexes and three foreign keys; a
// CreateWithdrawal records its request id with the response, debits the merchant's balance (read,
// check, update), and inserts the withdrawal, its queued payout, the ledger movement and its two
// entries. On SQLite the writes of one request run in the service's group commit (a savepoint each,
// one commit and one fsync per batch); on PostgreSQL a withdrawal is ONE statement, one round trip,
// committed by the server on its own: the cheapest form the operation can take there, against the
// service's one transaction of about fifteen round trips.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type SQLite from "better-sqlite3";
import pg from "pg";
import { newRowId } from "../src/domain/ids.ts";
import { merchantAccount, SYSTEM_ACCOUNTS } from "../src/domain/ledger.ts";
import { seedCatalog } from "../src/store/currencies.ts";
import { insertMerchant, insertWithdrawalMethod } from "../src/store/merchants.ts";
import { SecretBox } from "../src/store/secrets.ts";
import { openStore, type Store, type Tx } from "../src/store/store.ts";

/** What the floor server asks of its store: one durable invoice or withdrawal per request. */
export interface DataWriter {
  invoice(body: { order_no?: string; description?: string }): Promise<void>;
  /** `requestKey`: the request id as checked (lowercased); it also stands in for the body hash, which a floor skips. */
  withdrawal(requestKey: string, response: string): Promise<void>;
  read(id: number): Promise<string | null>;
  close(): Promise<void>;
}

const AMOUNT = 10_000_000n; // 10 USDT, the bench's withdrawal
const FUNDS = 10n ** 30n;

interface Seeded {
  merchantId: string;
  methodId: number;
}

const FLOOR_EMAIL = "data-floor@bench.invalid";

/**
 * One merchant with ample USDT and a withdrawal method, as the bench's own set-up has. On
 * PostgreSQL both floor processes share it, as both service processes share the bench's merchant
 * (and its balance row, which each withdrawal locks until its commit).
 */
async function seed(store: Store): Promise<Seeded> {
  const box = new SecretBox(randomBytes(32));
  return store.transaction(async (tx) => {
    const existing = await tx.db
      .selectFrom("merchants")
      .innerJoin("withdrawal_methods", "withdrawal_methods.merchant_id", "merchants.id")
      .select(["merchants.id as merchantId", "withdrawal_methods.id as methodId"])
      .where("merchants.email", "=", FLOOR_EMAIL)
      .executeTakeFirst();
    if (existing) return { merchantId: existing.merchantId, methodId: Number(existing.methodId) };
    await seedCatalog(tx);
    const now = new Date().toISOString();
    const merchant = await insertMerchant(
      tx,
      box,
      {
        email: FLOOR_EMAIL,
        merchantName: "floor",
        directorName: null,
        website: null,
        logo: null,
        whitelabeling: false,
        feePercent: "1",
        feesPaidBy: "merchant",
      },
      now,
    );
    const method = await insertWithdrawalMethod(
      tx,
      { merchantId: merchant.id, currency: "USDT", address: "0xfloor", label: null },
      now,
    );
    await tx.db
      .insertInto("ledger_balances")
      .values({ account: merchantAccount(merchant.id), currency: "USDT", balance: FUNDS.toString(), updated_at: now })
      .execute();
    return { merchantId: merchant.id, methodId: method.id };
  });
}

const INVOICE_COLUMNS =
  "id, merchant_id, idempotency_key, request_hash, type, status, currency, settlement_currency, convert_currency, amount, final_amount, merchant_fee, network_and_other_fees, merchant_receive_amount, callback_url, success_url, return_url, fail_url, order_no, description, api_source, deposit_address, expires_at, created_at, updated_at";

function invoiceValues(merchantId: string, body: { order_no?: string; description?: string }): unknown[] {
  const id = newRowId();
  const nowMs = Date.now();
  const now = new Date(nowMs).toISOString();
  return [
    id,
    merchantId,
    null,
    null,
    "b2c",
    "pending",
    "USDT",
    "USDT",
    null,
    "25500000",
    "25500000",
    "255000",
    "0",
    "25245000",
    null,
    null,
    null,
    null,
    body.order_no ?? null,
    body.description ?? null,
    null,
    `0x${id.replaceAll("-", "").padEnd(40, "0")}`,
    new Date(nowMs + 3_600_000).toISOString(),
    now,
    now,
  ];
}

const WITHDRAWAL_SQL = {
  claim:
    "INSERT INTO signed_requests (request_id, request_id_sent, merchant_id, route, body_hash, state, response_status, response_body, created_at, updated_at) VALUES (?, ?, ?, '/public/v1/withdrawals/create', ?, 'completed', 200, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING",
  balance: "SELECT balance FROM ledger_balances WHERE account = ? AND currency = 'USDT'",
  withdrawal:
    "INSERT INTO withdrawals (request_id, merchant_id, withdrawal_method_id, currency, amount, created_at) VALUES (?, ?, ?, 'USDT', ?, ?)",
  payout:
    "INSERT INTO payouts (request_id, operation, merchant_id, currency, amount, destination, ledger_cause, state, attempts, created_at, updated_at, state_changed_at) VALUES (?, 'withdrawal', ?, 'USDT', ?, '0xfloor', 'withdrawal', 'queued', 0, ?, ?, ?)",
  movement:
    "INSERT INTO ledger_movements (id, cause, cause_id, kind, memo, created_at) VALUES (?, 'withdrawal', ?, 'debit', 'withdrawal', ?)",
  entries:
    "INSERT INTO ledger_entries (movement_id, account, currency, amount) VALUES (?, ?, 'USDT', ?), (?, ?, 'USDT', ?)",
  debit: "UPDATE ledger_balances SET balance = ?, updated_at = ? WHERE account = ? AND currency = 'USDT'",
};

function writingConnection(tx: Tx): SQLite.Database {
  if (!tx.sqlite) throw new Error("invariant violated: a SQLite transaction has its connection");
  return tx.sqlite;
}

/** A fresh SQLite store in a temporary directory, migrated and seeded, with `schema` (the lean tables) added. */
async function openSeededStore(synchronous: "FULL" | "NORMAL", schema?: string) {
  const dir = mkdtempSync(join(tmpdir(), "payments-data-floor-"));
  const path = join(dir, "floor.db");
  const store = await openStore(`sqlite:${path}`, { sqliteSynchronous: synchronous });
  const seeded = await seed(store);
  if (schema) {
    await store.transaction(async (tx) => {
      writingConnection(tx).exec(schema);
    });
  }
  return { dir, path, store, ...seeded, account: merchantAccount(seeded.merchantId) };
}

/**
 * Investigation (DATA_FLOOR_MODEL=lean, SQLite only): the fewest rows and index entries the product's
 * rules allow, to learn whether a data model other than the service's could fit the CPU budget.
 * A withdrawal is ONE row carrying its request record, response and payout state (keyed by the
 * request id, WITHOUT ROWID so the key is the table), with a partial index holding only queued
 * payouts; its ledger posting is ONE two-legged transfer row (debit account, credit account),
 * appended under an integer key, with no index (the cause is unique through the withdrawal's key);
 * and the merchant's balance is read, checked and updated as in the service. An invoice is the
 * service's row in a table keyed by its time-ordered id (WITHOUT ROWID: one B-tree instead of the
 * rowid table plus the primary key's index), the idempotency index holding only rows that carry a
 * key, and the service's other two indexes and three foreign keys.
 */
const LEAN_SCHEMA = `
CREATE TABLE lean_operations (
  request_id TEXT PRIMARY KEY, request_id_sent TEXT NOT NULL, merchant_id TEXT NOT NULL REFERENCES merchants(id),
  route TEXT NOT NULL, body_hash TEXT NOT NULL, response_body TEXT NOT NULL, withdrawal_method_id INTEGER NOT NULL,
  currency TEXT NOT NULL, amount TEXT NOT NULL, destination TEXT NOT NULL, payout_state TEXT NOT NULL,
  attempts INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX lean_operations_queued ON lean_operations (created_at) WHERE payout_state = 'queued';
CREATE TABLE lean_transfers (
  id INTEGER PRIMARY KEY, cause TEXT NOT NULL, cause_id TEXT NOT NULL, debit_account TEXT NOT NULL,
  credit_account TEXT NOT NULL, currency TEXT NOT NULL, amount TEXT NOT NULL, created_at TEXT NOT NULL
);
CREATE TABLE lean_invoices (
  id TEXT PRIMARY KEY, merchant_id TEXT NOT NULL REFERENCES merchants(id), idempotency_key TEXT, request_hash TEXT,
  type TEXT NOT NULL, status TEXT NOT NULL, currency TEXT NOT NULL REFERENCES currencies(ticker),
  settlement_currency TEXT NOT NULL REFERENCES currencies(ticker), convert_currency TEXT, amount TEXT NOT NULL,
  final_amount TEXT NOT NULL, merchant_fee TEXT NOT NULL, network_and_other_fees TEXT NOT NULL,
  merchant_receive_amount TEXT NOT NULL, callback_url TEXT, success_url TEXT, return_url TEXT, fail_url TEXT,
  order_no TEXT, description TEXT, api_source TEXT, deposit_address TEXT, expires_at TEXT,
  expiry_deferred INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX lean_invoices_idempotency ON lean_invoices (merchant_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX lean_invoices_order_no ON lean_invoices (merchant_id, order_no, created_at);
CREATE INDEX lean_invoices_due ON lean_invoices (status, expiry_deferred, expires_at);
`;

const LEAN_SQL = {
  operation:
    "INSERT INTO lean_operations (request_id, request_id_sent, merchant_id, route, body_hash, response_body, withdrawal_method_id, currency, amount, destination, payout_state, attempts, created_at, updated_at) VALUES (?, ?, ?, '/public/v1/withdrawals/create', ?, ?, ?, 'USDT', ?, '0xfloor', 'queued', 0, ?, ?) ON CONFLICT (request_id) DO NOTHING",
  transfer:
    "INSERT INTO lean_transfers (cause, cause_id, debit_account, credit_account, currency, amount, created_at) VALUES ('withdrawal', ?, ?, ?, 'USDT', ?, ?)",
};

export async function sqliteDataWriter(synchronous: "FULL" | "NORMAL"): Promise<DataWriter> {
  if (process.env.DATA_FLOOR_MODEL === "lean") {
    return process.env.FLOOR_WRITER === "thread"
      ? sqliteLeanThreadDataWriter(synchronous)
      : sqliteLeanDataWriter(synchronous);
  }
  const { dir, store, merchantId, methodId, account } = await openSeededStore(synchronous);
  const reader = store.sqlite;
  if (!reader) throw new Error("invariant violated: a file store has a reading connection");
  const select = reader.prepare("SELECT description FROM invoices WHERE rowid = ?").pluck();
  const insertInvoice = `INSERT INTO invoices (${INVOICE_COLUMNS}) VALUES (${Array(25).fill("?").join(", ")})`;
  return {
    invoice: (body) =>
      store.transaction(async (tx) => {
        // The store caches prepared statements per connection: a lookup after the first.
        writingConnection(tx)
          .prepare(insertInvoice)
          .run(...invoiceValues(merchantId, body));
      }),
    withdrawal: (key, response) =>
      store.transaction(async (tx) => {
        const db = writingConnection(tx);
        const now = new Date().toISOString();
        const claimed = db.prepare(WITHDRAWAL_SQL.claim).run(key, key, merchantId, key, response, now, now);
        if (claimed.changes !== 1) throw new Error(`floor: request id ${key} repeated`);
        const balance = BigInt(db.prepare(WITHDRAWAL_SQL.balance).pluck().get(account) as string);
        if (balance < AMOUNT) throw new Error("floor: the balance ran out");
        const amount = AMOUNT.toString();
        db.prepare(WITHDRAWAL_SQL.withdrawal).run(key, merchantId, methodId, amount, now);
        db.prepare(WITHDRAWAL_SQL.payout).run(key, merchantId, amount, now, now, now);
        const movementId = newRowId();
        db.prepare(WITHDRAWAL_SQL.movement).run(movementId, key, now);
        db.prepare(WITHDRAWAL_SQL.entries).run(
          movementId,
          account,
          (-AMOUNT).toString(),
          movementId,
          SYSTEM_ACCOUNTS.payouts,
          amount,
        );
        db.prepare(WITHDRAWAL_SQL.debit).run((balance - AMOUNT).toString(), now, account);
      }),
    read: async (id) => (select.get(id) as string | undefined) ?? null,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function sqliteLeanDataWriter(synchronous: "FULL" | "NORMAL"): Promise<DataWriter> {
  const { dir, store, merchantId, methodId, account } = await openSeededStore(synchronous, LEAN_SCHEMA);
  const reader = store.sqlite;
  if (!reader) throw new Error("invariant violated: a file store has a reading connection");
  const select = reader.prepare("SELECT description FROM lean_invoices WHERE id = ?").pluck();
  const insertInvoice = `INSERT INTO lean_invoices (${INVOICE_COLUMNS}) VALUES (${Array(25).fill("?").join(", ")})`;
  return {
    invoice: (body) =>
      store.transaction(async (tx) => {
        writingConnection(tx)
          .prepare(insertInvoice)
          .run(...invoiceValues(merchantId, body));
      }),
    withdrawal: (key, response) =>
      store.transaction(async (tx) => {
        const db = writingConnection(tx);
        const now = new Date().toISOString();
        const amount = AMOUNT.toString();
        const claimed = db
          .prepare(LEAN_SQL.operation)
          .run(key, key, merchantId, key, response, methodId, amount, now, now);
        if (claimed.changes !== 1) throw new Error(`floor: request id ${key} repeated`);
        const balance = BigInt(db.prepare(WITHDRAWAL_SQL.balance).pluck().get(account) as string);
        if (balance < AMOUNT) throw new Error("floor: the balance ran out");
        db.prepare(LEAN_SQL.transfer).run(key, account, SYSTEM_ACCOUNTS.payouts, amount, now);
        db.prepare(WITHDRAWAL_SQL.debit).run((balance - AMOUNT).toString(), now, account);
      }),
    read: async (id) => (select.get(String(id)) as string | undefined) ?? null,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The lean model with its writing connection in a worker thread (dataFloorWriterThread.mjs), fed
 * once per turn of the event loop: the least an operation can cost the event loop on this stack,
 * whatever else a server does.
 */
async function sqliteLeanThreadDataWriter(synchronous: "FULL" | "NORMAL"): Promise<DataWriter> {
  const { Worker } = await import("node:worker_threads");
  const { dir, path, store, merchantId, methodId, account } = await openSeededStore(synchronous, LEAN_SCHEMA);
  await store.close();
  const worker = new Worker(new URL("./dataFloorWriterThread.mjs", import.meta.url), {
    workerData: {
      path,
      full: synchronous === "FULL",
      merchantId,
      account,
      methodId,
      payoutsAccount: SYSTEM_ACCOUNTS.payouts,
      amount: AMOUNT.toString(),
      sql: {
        invoice: `INSERT INTO lean_invoices (${INVOICE_COLUMNS}) VALUES (${Array(25).fill("?").join(", ")})`,
        operation: LEAN_SQL.operation,
        balance: WITHDRAWAL_SQL.balance,
        transfer: LEAN_SQL.transfer,
        debit: WITHDRAWAL_SQL.debit,
      },
    },
  });
  await new Promise<void>((resolve, reject) => {
    worker.once("online", resolve);
    worker.once("error", reject);
  });
  const pending = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let next = 0;
  let outbox: unknown[][] = [];
  worker.on("message", ({ ids, failed }: { ids: number[]; failed: number[] }) => {
    const refused = new Set(failed);
    for (const id of ids) {
      const waiter = pending.get(id);
      pending.delete(id);
      if (refused.has(id)) waiter?.reject(new Error("floor: the write was refused"));
      else waiter?.resolve();
    }
  });
  const send = (request: unknown[]) =>
    new Promise<void>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      if (outbox.length === 0) {
        setImmediate(() => {
          worker.postMessage(outbox);
          outbox = [];
        });
      }
      outbox.push([id, ...request]);
    });
  const { default: Database } = await import("better-sqlite3");
  const reader = new Database(path, { readonly: true });
  const select = reader.prepare("SELECT description FROM lean_invoices WHERE id = ?").pluck();
  return {
    invoice: (body) => send(["invoice", invoiceValues(merchantId, body)]),
    withdrawal: (key, response) => send(["withdrawal", key, response]),
    read: async (id) => (select.get(String(id)) as string | undefined) ?? null,
    close: async () => {
      reader.close();
      await worker.terminate();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The withdrawal as one statement: every write is a data-modifying CTE hanging off the claim and
 * the conditional debit, so a repeated id or a short balance writes nothing.
 */
const PG_WITHDRAWAL = `
WITH claim AS (
  INSERT INTO signed_requests (request_id, request_id_sent, merchant_id, route, body_hash, state, response_status, response_body, created_at, updated_at)
  VALUES ($1, $2, $3, '/public/v1/withdrawals/create', $1, 'completed', 200, $4, $5, $5)
  ON CONFLICT (request_id) DO NOTHING RETURNING request_id
), debit AS (
  UPDATE ledger_balances SET balance = (balance::numeric - $6::numeric)::text, updated_at = $5
  WHERE account = $7 AND currency = 'USDT' AND balance::numeric >= $6::numeric AND EXISTS (SELECT 1 FROM claim)
  RETURNING 1
), withdrawal AS (
  INSERT INTO withdrawals (request_id, merchant_id, withdrawal_method_id, currency, amount, created_at)
  SELECT $1, $3, $8, 'USDT', $6, $5 FROM debit
), payout AS (
  INSERT INTO payouts (request_id, operation, merchant_id, currency, amount, destination, ledger_cause, state, attempts, created_at, updated_at, state_changed_at)
  SELECT $1, 'withdrawal', $3, 'USDT', $6, '0xfloor', 'withdrawal', 'queued', 0, $5, $5, $5 FROM debit
), movement AS (
  INSERT INTO ledger_movements (id, cause, cause_id, kind, memo, created_at)
  SELECT $9, 'withdrawal', $1, 'debit', 'withdrawal', $5 FROM debit RETURNING id
), entries AS (
  INSERT INTO ledger_entries (movement_id, account, currency, amount)
  SELECT movement.id, e.account, 'USDT', e.amount FROM movement, (VALUES ($7, $10), ($11, $6)) AS e(account, amount)
)
SELECT count(*)::int AS debited FROM debit`;

/**
 * Investigation (DATA_FLOOR_MODEL=batch, PostgreSQL): the withdrawals that arrive in one turn of the
 * event loop written by ONE set-based statement, one round trip and one commit for the batch. The
 * merchant's balance is debited once by the batch's sum; a short balance or a repeated id refuses
 * the whole batch (a floor with ample funds and fresh ids never meets either). The upper bound of
 * an architecture that batches requests inside the database, as a group commit does on SQLite.
 */
const PG_WITHDRAWAL_BATCH = `
WITH req AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS r(key, response, movement_id)
), claim AS (
  INSERT INTO signed_requests (request_id, request_id_sent, merchant_id, route, body_hash, state, response_status, response_body, created_at, updated_at)
  SELECT key, key, $4, '/public/v1/withdrawals/create', key, 'completed', 200, response, $5, $5 FROM req
  ON CONFLICT (request_id) DO NOTHING RETURNING request_id
), debit AS (
  UPDATE ledger_balances SET balance = (balance::numeric - $6::numeric * (SELECT count(*) FROM req))::text, updated_at = $5
  WHERE account = $7 AND currency = 'USDT' AND balance::numeric >= $6::numeric * (SELECT count(*) FROM req)
    AND (SELECT count(*) FROM claim) = (SELECT count(*) FROM req)
  RETURNING 1
), withdrawal AS (
  INSERT INTO withdrawals (request_id, merchant_id, withdrawal_method_id, currency, amount, created_at)
  SELECT key, $4, $8, 'USDT', $6, $5 FROM req, debit
), payout AS (
  INSERT INTO payouts (request_id, operation, merchant_id, currency, amount, destination, ledger_cause, state, attempts, created_at, updated_at, state_changed_at)
  SELECT key, 'withdrawal', $4, 'USDT', $6, '0xfloor', 'withdrawal', 'queued', 0, $5, $5, $5 FROM req, debit
), movement AS (
  INSERT INTO ledger_movements (id, cause, cause_id, kind, memo, created_at)
  SELECT movement_id, 'withdrawal', key, 'debit', 'withdrawal', $5 FROM req, debit RETURNING id
), entries AS (
  INSERT INTO ledger_entries (movement_id, account, currency, amount)
  SELECT movement.id, e.account, 'USDT', e.amount FROM movement, (VALUES ($7, $9), ($10, $6)) AS e(account, amount)
)
SELECT count(*)::int AS debited FROM debit`;

function batchedPostgresWithdrawals(
  pool: pg.Pool,
  merchantId: string,
  account: string,
  methodId: number,
): DataWriter["withdrawal"] {
  let batch: { key: string; response: string; resolve: () => void; reject: (error: Error) => void }[] = [];
  const flush = async () => {
    const requests = batch;
    batch = [];
    try {
      const result = await pool.query<{ debited: number }>({
        name: "data_floor_withdrawal_batch",
        text: PG_WITHDRAWAL_BATCH,
        values: [
          requests.map((r) => r.key),
          requests.map((r) => r.response),
          requests.map(() => newRowId()),
          merchantId,
          new Date().toISOString(),
          AMOUNT.toString(),
          account,
          methodId,
          (-AMOUNT).toString(),
          SYSTEM_ACCOUNTS.payouts,
        ],
      });
      if (result.rows[0]?.debited !== 1) throw new Error("floor: batch not debited");
      for (const r of requests) r.resolve();
    } catch (error) {
      for (const r of requests) r.reject(error as Error);
    }
  };
  return (key, response) =>
    new Promise<void>((resolve, reject) => {
      if (batch.length === 0) setImmediate(flush);
      batch.push({ key, response, resolve, reject });
    });
}

export async function postgresDataWriter(databaseUrl: string): Promise<DataWriter> {
  // The service's schema in the bench's database: its own store migrates it (the service did already).
  const store = await openStore(databaseUrl);
  const { merchantId, methodId } = await seed(store);
  await store.close();
  const account = merchantAccount(merchantId);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const insertInvoice = `INSERT INTO invoices (${INVOICE_COLUMNS}) VALUES (${Array.from({ length: 25 }, (_, i) => `$${i + 1}`).join(", ")})`;
  const batched =
    process.env.DATA_FLOOR_MODEL === "batch" ? batchedPostgresWithdrawals(pool, merchantId, account, methodId) : null;
  return {
    invoice: async (body) => {
      await pool.query({ name: "data_floor_invoice", text: insertInvoice, values: invoiceValues(merchantId, body) });
    },
    withdrawal:
      batched ??
      (async (key, response) => {
        const result = await pool.query<{ debited: number }>({
          name: "data_floor_withdrawal",
          text: PG_WITHDRAWAL,
          values: [
            key,
            key,
            merchantId,
            response,
            new Date().toISOString(),
            AMOUNT.toString(),
            account,
            methodId,
            newRowId(),
            (-AMOUNT).toString(),
            SYSTEM_ACCOUNTS.payouts,
          ],
        });
        if (result.rows[0]?.debited !== 1) throw new Error(`floor: withdrawal ${key} not debited`);
      }),
    read: async (id) => {
      const result = await pool.query({
        name: "data_floor_select",
        text: "SELECT description FROM invoices WHERE id = $1",
        values: [String(id)],
      });
      return (result.rows[0]?.description as string | undefined) ?? null;
    },
    close: () => pool.end(),
  };
}
