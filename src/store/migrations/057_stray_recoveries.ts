// Stray tokens at forwarders are recoverable (issue 50 item 5): a stray may be at a customer's deposit address and in a token the catalog lacks, and the operator's recovery of one (a flush of its forwarder and token) is recorded; in one migration transaction.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

/** Rows copied per statement when SQLite rebuilds stray_payments. */
const COPY_BATCH = 200;

/** The stray_payments columns of migration 033, invoice_id and currency now nullable, and deposit_address_id and token. */
async function createStrayPayments(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("stray_payments")
    .addColumn("network", "text", (c) => c.notNull())
    .addColumn("tx_id", "text", (c) => c.notNull())
    .addColumn("invoice_id", "text", (c) => c.references("invoices.id"))
    .addColumn("currency", "text", (c) => c.references("currencies.ticker"))
    .addColumn("amount", "text", (c) => c.notNull())
    .addColumn("from_address", "text", (c) => c.notNull())
    .addColumn("block_number", "bigint", (c) => c.notNull())
    .addColumn("block_hash", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("deposit_address_id", "text", (c) => c.references("deposit_addresses.id"))
    .addColumn("token", "text")
    .addPrimaryKeyConstraint("stray_payments_pk", ["network", "tx_id"])
    .addCheckConstraint("stray_payments_one_address", sql`(invoice_id is null) <> (deposit_address_id is null)`)
    .execute();
  await db.schema.createIndex("stray_payments_invoice").on("stray_payments").column("invoice_id").execute();
  await db.schema.createIndex("stray_payments_created").on("stray_payments").column("created_at").execute();
}

/** SQLite cannot drop NOT NULL: stray_payments (nothing refers to it) is rebuilt inside this transaction. */
async function rebuildStrayPaymentsSqlite(db: Kysely<any>): Promise<void> {
  const kept = await db.selectFrom("stray_payments").selectAll().execute();
  await db.schema.dropTable("stray_payments").execute();
  await createStrayPayments(db);
  for (let i = 0; i < kept.length; i += COPY_BATCH) {
    await db
      .insertInto("stray_payments")
      .values(kept.slice(i, i + COPY_BATCH).map((r) => ({ ...r, deposit_address_id: null, token: null })))
      .execute();
  }
}

async function generalizeStrayPaymentsPostgres(db: Kysely<any>): Promise<void> {
  await sql`alter table stray_payments alter column invoice_id drop not null`.execute(db);
  await sql`alter table stray_payments alter column currency drop not null`.execute(db);
  await db.schema
    .alterTable("stray_payments")
    .addColumn("deposit_address_id", "text", (c) => c.references("deposit_addresses.id"))
    .execute();
  await db.schema.alterTable("stray_payments").addColumn("token", "text").execute();
  await sql`alter table stray_payments add constraint stray_payments_one_address check ((invoice_id is null) <> (deposit_address_id is null))`.execute(
    db,
  );
}

/**
 * One recovery per stray (its network and tx id): a flush of the stray's forwarder for its token,
 * carried by a flush (flush_id) as deposits are; the Flushed amount and hash once settled.
 */
async function createStrayRecoveries(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("stray_recoveries")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("network", "text", (c) => c.notNull())
    .addColumn("stray_tx_id", "text", (c) => c.notNull())
    .addColumn("forwarder_id", "text", (c) => c.notNull())
    .addColumn("deposit_address", "text", (c) => c.notNull())
    .addColumn("factory", "text", (c) => c.notNull())
    // The ledger currency (the catalog entry, or `<network>:<contract>` for a token the catalog lacks) and the token (null: the native coin).
    .addColumn("currency", "text", (c) => c.notNull())
    .addColumn("token", "text")
    // waiting, flushing, recovered, failed, returned.
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("flush_id", "text", (c) => c.references("flushes.id"))
    .addColumn("amount", "text")
    .addColumn("tx_hash", "text")
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("last_error", "text")
    // Who asked for it (the audit), and who marked it returned.
    .addColumn("actor", "text", (c) => c.notNull())
    .addColumn("returned_by", "text")
    .addColumn("return_note", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    // Recovering the same stray twice moves it once: the database says so, whatever process asks.
    .addUniqueConstraint("stray_recoveries_stray", ["network", "stray_tx_id"])
    .execute();
  await db.schema
    .createIndex("stray_recoveries_waiting")
    .on("stray_recoveries")
    .columns(["network", "state", "created_at"])
    .execute();
  await db.schema.createIndex("stray_recoveries_flush").on("stray_recoveries").column("flush_id").execute();
}

async function migrate(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const tables = await db.introspection.getTables();
  // Done already, and killed before the migration was recorded (SQLite records it outside this transaction).
  if (tables.some((t) => t.name === "stray_recoveries")) return;
  if (dialect === "postgres") await generalizeStrayPaymentsPostgres(db);
  else await rebuildStrayPaymentsSqlite(db);
  await createStrayRecoveries(db);
}

export function strayRecoveries(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (db.isTransaction) await migrate(db, dialect);
      else await db.transaction().execute((trx) => migrate(trx, dialect));
    },
  };
}
