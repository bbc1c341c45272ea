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

/** A fresh SQLite store in a temporary directory, migrated and seeded. */
async function openSeededStore(synchronous: "FULL" | "NORMAL") {
  const dir = mkdtempSync(join(tmpdir(), "payments-data-floor-"));
  const path = join(dir, "floor.db");
  const store = await openStore(`sqlite:${path}`, { sqliteSynchronous: synchronous });
  const seeded = await seed(store);
  return { dir, path, store, ...seeded, account: merchantAccount(seeded.merchantId) };
}

export async function sqliteDataWriter(synchronous: "FULL" | "NORMAL"): Promise<DataWriter> {
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

export async function postgresDataWriter(databaseUrl: string): Promise<DataWriter> {
  // The service's schema in the bench's database: its own store migrates it (the service did already).
  const store = await openStore(databaseUrl);
  const { merchantId, methodId } = await seed(store);
  await store.close();
  const account = merchantAccount(merchantId);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const insertInvoice = `INSERT INTO invoices (${INVOICE_COLUMNS}) VALUES (${Array.from({ length: 25 }, (_, i) => `$${i + 1}`).join(", ")})`;
  return {
    invoice: async (body) => {
      await pool.query({ name: "data_floor_invoice", text: insertInvoice, values: invoiceValues(merchantId, body) });
    },
    withdrawal: async (key, response) => {
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
    },
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
