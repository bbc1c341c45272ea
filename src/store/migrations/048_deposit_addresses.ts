// A deposit address per customer (product §30): the addresses, their deposits, each catalog entry's minDeposit, and flush deposits that carry either an invoice's payment or a customer's deposit; in one migration transaction.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

/** Rows copied per statement when SQLite rebuilds flush_deposits. */
const COPY_BATCH = 200;

async function createDepositAddresses(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("deposit_addresses")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
    // The merchant's own reference of its customer, and the ticker (shared by the currency's networks).
    .addColumn("customer", "text", (c) => c.notNull())
    .addColumn("currency", "text", (c) => c.notNull())
    // The forwarder (bytes32 id, checksummed address, lowercase factory): the same on every network.
    .addColumn("address", "text", (c) => c.notNull())
    .addColumn("forwarder_id", "text", (c) => c.notNull())
    .addColumn("factory", "text", (c) => c.notNull())
    .addColumn("callback_url", "text")
    .addColumn("active", "integer", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    // The same customer and currency answer the same address, however many requests race.
    .addUniqueConstraint("deposit_addresses_customer", ["merchant_id", "customer", "currency"])
    .execute();
  // The scanner's one indexed lookup per batch.
  await db.schema.createIndex("deposit_addresses_address").on("deposit_addresses").column("address").execute();
  await db.schema
    .createIndex("deposit_addresses_merchant")
    .on("deposit_addresses")
    .columns(["merchant_id", "created_at", "id"])
    .execute();
}

async function createDeposits(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("deposits")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("deposit_address_id", "text", (c) => c.notNull().references("deposit_addresses.id"))
    .addColumn("merchant_id", "text", (c) => c.notNull())
    .addColumn("network", "text", (c) => c.notNull())
    // `hash` or `hash:logIndex`, as invoice payments key theirs (chainTxId).
    .addColumn("tx_id", "text", (c) => c.notNull())
    .addColumn("tx_hash", "text", (c) => c.notNull())
    .addColumn("log_index", "integer")
    .addColumn("block_number", "bigint", (c) => c.notNull())
    .addColumn("block_hash", "text", (c) => c.notNull())
    // The catalog entry it came in; the amounts are in its units.
    .addColumn("currency", "text", (c) => c.notNull())
    .addColumn("amount", "text", (c) => c.notNull())
    .addColumn("from_address", "text", (c) => c.notNull())
    // The sender's screening when it was recorded: clear, listed or pending.
    .addColumn("screening", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("confirmed", "integer", (c) => c.notNull())
    .addColumn("merchant_fee", "text")
    .addColumn("network_fee", "text")
    .addColumn("credited_amount", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .addUniqueConstraint("deposits_transfer", ["network", "tx_id"])
    .execute();
  await db.schema
    .createIndex("deposits_merchant")
    .on("deposits")
    .columns(["merchant_id", "created_at", "id"])
    .execute();
  await db.schema
    .createIndex("deposits_unconfirmed")
    .on("deposits")
    .columns(["network", "confirmed", "block_number"])
    .execute();
}

/** The flush_deposits columns of migration 032, payment_id and invoice_id now nullable, and deposit_id. */
async function createFlushDeposits(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("flush_deposits")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("payment_id", "text", (c) => c.unique().references("invoice_payments.id"))
    .addColumn("invoice_id", "text", (c) => c.references("invoices.id"))
    .addColumn("network", "text", (c) => c.notNull())
    .addColumn("forwarder_id", "text", (c) => c.notNull())
    .addColumn("deposit_address", "text", (c) => c.notNull())
    .addColumn("factory", "text", (c) => c.notNull())
    .addColumn("currency", "text", (c) => c.notNull())
    .addColumn("token", "text")
    .addColumn("amount", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull().references("flush_deposit_states.state"))
    .addColumn("flush_id", "text", (c) => c.references("flushes.id"))
    .addColumn("outcome", "text")
    .addColumn("flushed_amount", "text")
    .addColumn("gas_share", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("next_attempt_at", "text", (c) => c.notNull())
    .addColumn("last_error", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .addColumn("deposit_id", "text", (c) => c.unique().references("deposits.id"))
    .addCheckConstraint("flush_deposits_one_source", sql`(payment_id is null) <> (deposit_id is null)`)
    .execute();
  await db.schema
    .createIndex("flush_deposits_waiting")
    .on("flush_deposits")
    .columns(["network", "state", "created_at"])
    .execute();
  await db.schema.createIndex("flush_deposits_flush").on("flush_deposits").column("flush_id").execute();
}

/**
 * SQLite cannot drop NOT NULL: flush_deposits is rebuilt under its own name inside this
 * transaction, foreign keys deferred to the commit (flush_deposit_retries points at it), as 041 did.
 */
async function rebuildFlushDepositsSqlite(db: Kysely<any>): Promise<void> {
  const kept = await db.selectFrom("flush_deposits").selectAll().execute();
  await sql`pragma defer_foreign_keys = on`.execute(db);
  await db.schema.dropTable("flush_deposits").execute();
  await createFlushDeposits(db);
  for (let i = 0; i < kept.length; i += COPY_BATCH) {
    await db
      .insertInto("flush_deposits")
      .values(kept.slice(i, i + COPY_BATCH).map((r) => ({ ...r, deposit_id: null })))
      .execute();
  }
}

async function generalizeFlushDepositsPostgres(db: Kysely<any>): Promise<void> {
  await sql`alter table flush_deposits alter column payment_id drop not null`.execute(db);
  await sql`alter table flush_deposits alter column invoice_id drop not null`.execute(db);
  await db.schema
    .alterTable("flush_deposits")
    .addColumn("deposit_id", "text", (c) => c.unique().references("deposits.id"))
    .execute();
  await sql`alter table flush_deposits add constraint flush_deposits_one_source check ((payment_id is null) <> (deposit_id is null))`.execute(
    db,
  );
}

async function migrate(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const tables = await db.introspection.getTables();
  // Done already, and killed before the migration was recorded (SQLite records it outside this transaction).
  if (tables.some((t) => t.name === "deposit_addresses")) return;
  // Minor units of the entry, as text; null: no minimum (a deposit is dust only when its fees take it all).
  await db.schema.alterTable("currencies").addColumn("min_deposit", "text").execute();
  await createDepositAddresses(db);
  await createDeposits(db);
  if (dialect === "postgres") await generalizeFlushDepositsPostgres(db);
  else await rebuildFlushDepositsSqlite(db);
}

export function depositAddresses(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (db.isTransaction) await migrate(db, dialect);
      else await db.transaction().execute((trx) => migrate(trx, dialect));
    },
  };
}
