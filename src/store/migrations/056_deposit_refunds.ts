// Refunds of customers' held deposits (product §30, §25): a refund names either an invoice or a deposit (exactly one), at most one live refund per deposit; in one migration transaction.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

/** Rows copied per statement when SQLite rebuilds refunds. */
const COPY_BATCH = 200;

/** The refunds columns of migrations 005 and 024, invoice_id now nullable, and deposit_id. */
async function createRefunds(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("refunds")
    .addColumn("request_id", "text", (c) => c.primaryKey().references("signed_requests.request_id"))
    .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
    .addColumn("invoice_id", "text", (c) => c.references("invoices.id"))
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("currency", "text", (c) => c.notNull().references("currencies.ticker"))
    .addColumn("amount", "text", (c) => c.notNull())
    .addColumn("debit_currency", "text", (c) => c.notNull().references("currencies.ticker"))
    .addColumn("debit_amount", "text", (c) => c.notNull())
    .addColumn("to_address", "text")
    .addColumn("withdraw_to_same_address", "integer", (c) => c.notNull())
    .addColumn("reason", "text")
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("partial", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("paid_share", "text")
    .addColumn("network_fee_paid_by", "text")
    .addColumn("deposit_id", "text", (c) => c.references("deposits.id"))
    .addCheckConstraint("refunds_one_subject", sql`(invoice_id is null) <> (deposit_id is null)`)
    .execute();
  // The indexes of migrations 011 and 024, as they were.
  await db.schema
    .createIndex("refunds_merchant_created")
    .on("refunds")
    .columns(["merchant_id", "created_at", "request_id"])
    .execute();
  await db.schema
    .createIndex("refunds_live_full_per_invoice")
    .on("refunds")
    .column("invoice_id")
    .unique()
    .where(sql<boolean>`status <> 'failed' and partial = 0`)
    .execute();
  await db.schema.createIndex("refunds_invoice").on("refunds").column("invoice_id").execute();
}

/**
 * SQLite cannot drop NOT NULL nor add a check: refunds is rebuilt under its own name inside this
 * transaction, foreign keys deferred to the commit (refund_claims points at it), as 048 did.
 */
async function rebuildRefundsSqlite(db: Kysely<any>): Promise<void> {
  const kept = await db.selectFrom("refunds").selectAll().execute();
  await sql`pragma defer_foreign_keys = on`.execute(db);
  await db.schema.dropTable("refunds").execute();
  await createRefunds(db);
  for (let i = 0; i < kept.length; i += COPY_BATCH) {
    await db
      .insertInto("refunds")
      .values(kept.slice(i, i + COPY_BATCH).map((r) => ({ ...r, deposit_id: null })))
      .execute();
  }
}

async function generalizeRefundsPostgres(db: Kysely<any>): Promise<void> {
  await sql`alter table refunds alter column invoice_id drop not null`.execute(db);
  await db.schema
    .alterTable("refunds")
    .addColumn("deposit_id", "text", (c) => c.references("deposits.id"))
    .execute();
  await sql`alter table refunds add constraint refunds_one_subject check ((invoice_id is null) <> (deposit_id is null))`.execute(
    db,
  );
}

async function migrate(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const columns = (await db.introspection.getTables()).find((t) => t.name === "refunds")?.columns ?? [];
  // Done already, and killed before the migration was recorded (SQLite records it outside this transaction).
  if (columns.some((c) => c.name === "deposit_id")) return;
  if (dialect === "postgres") await generalizeRefundsPostgres(db);
  else await rebuildRefundsSqlite(db);
  // A held deposit has at most one live refund: a failed or expired one leaves it held, to decide anew.
  await db.schema
    .createIndex("refunds_live_per_deposit")
    .on("refunds")
    .column("deposit_id")
    .unique()
    .where(sql<boolean>`status <> 'failed' and deposit_id is not null`)
    .execute();
  // A deposit carries its latest refund, whatever its end: read by deposit id for every deposit shown.
  await db.schema.createIndex("refunds_deposit").on("refunds").column("deposit_id").execute();
}

export function depositRefunds(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (db.isTransaction) await migrate(db, dialect);
      else await db.transaction().execute((trx) => migrate(trx, dialect));
    },
  };
}
