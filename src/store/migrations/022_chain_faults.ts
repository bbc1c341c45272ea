// The chain rail under faults (product §19): nonce fills and gap watch, sweep funding nonces, the scanner's lease token and block time, and which resolution covered a payment.
import type { Kysely } from "kysely";

export const chainFaults = {
  async up(db: Kysely<unknown>): Promise<void> {
    // Zero-value transfers of the hot wallet to itself that fill a nonce nothing else will use.
    await db.schema
      .createTable("nonce_fills")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("network", "text", (c) => c.notNull())
      .addColumn("from_address", "text", (c) => c.notNull())
      .addColumn("nonce", "integer", (c) => c.notNull())
      .addColumn("hash", "text", (c) => c.notNull().unique())
      .addColumn("raw", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("gas_cost", "text")
      .addColumn("last_error", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("nonce_fills_open").on("nonce_fills").columns(["network", "state", "nonce"]).execute();
    // The hot wallet's nonce of a sweep's gas funding (null: a funding signed before this migration, read from its bytes).
    await db.schema.alterTable("sweeps").addColumn("funding_nonce", "integer").execute();
    // Since when the chain's nonce has stayed below a nonce no stored transaction will use (null: no gap).
    await db.schema.alterTable("networks").addColumn("nonce_gap_since", "text").execute();
    await db.schema
      .alterTable("networks")
      .addColumn("nonce_gaps", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    // The scanner lease's token: every write of a batch checks it (a batch that outlived its lease writes nothing).
    await db.schema.alterTable("networks").addColumn("lease_token", "text").execute();
    // The timestamp of the last scanned block: invoices with a deposit address expire by the chain's time.
    await db.schema.alterTable("networks").addColumn("scanned_time", "text").execute();
    // The resolution that covered a payment (null: not resolved yet; later payments can be resolved again).
    await db.schema.alterTable("invoice_payments").addColumn("resolved_at", "text").execute();
  },
};
