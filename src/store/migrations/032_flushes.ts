// Flushes (product §24, issue 36): confirmed payments to forwarder deposit addresses, moved to the hot wallet in batches by one signed transaction each.
import type { Kysely } from "kysely";

/** A flush's states: `signed` (stored, broadcast again until mined), `completed` (mined), `reverted` (mined, reverted: its deposits wait again), `dropped` (its nonce went to another transaction: its deposits wait again). */
export const FLUSH_STATES = ["signed", "completed", "reverted", "dropped"] as const;
/** A deposit's states: `waiting` (for a batch), `flushing` (in a signed flush), `flushed`, `failed` (FlushFailed past its bound: the operator's). */
export const FLUSH_DEPOSIT_STATES = ["waiting", "flushing", "flushed", "failed"] as const;

export const flushes = {
  async up(db: Kysely<unknown>): Promise<void> {
    await stateTables(db);
    await flushesTable(db);
    await depositsTable(db);
  },
};

async function stateTables(db: Kysely<unknown>): Promise<void> {
  // State tables: a state column can only name a known state (a foreign key, on both stores).
  for (const [table, states] of [
    ["flush_states", FLUSH_STATES],
    ["flush_deposit_states", FLUSH_DEPOSIT_STATES],
  ] as const) {
    await db.schema
      .createTable(table)
      .addColumn("state", "text", (c) => c.primaryKey())
      .execute();
    await (db as Kysely<Record<string, { state: string }>>)
      .insertInto(table)
      .values(states.map((state) => ({ state })))
      .execute();
  }
}

async function flushesTable(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("flushes")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("network", "text", (c) => c.notNull())
    // The hot wallet's nonce (from takeHotNonce); replacements keep it.
    .addColumn("nonce", "integer", (c) => c.notNull())
    .addColumn("from_address", "text", (c) => c.notNull())
    // The factory called (lowercase): its logs say what each deposit gave.
    .addColumn("factory", "text", (c) => c.notNull())
    // The current signed transaction and its hash, stored before any broadcast.
    .addColumn("signed_raw", "text", (c) => c.notNull())
    .addColumn("tx_hash", "text", (c) => c.notNull())
    // JSON array of earlier signed transactions at this nonce, replaced by a higher fee: any may be the one mined.
    .addColumn("replaced", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull().references("flush_states.state"))
    .addColumn("gas_limit", "text", (c) => c.notNull())
    .addColumn("max_fee_per_gas", "text", (c) => c.notNull())
    .addColumn("max_priority_fee_per_gas", "text", (c) => c.notNull())
    // From the receipt: gas used and its cost in wei (posted to the operator's network fees, split over the deposits).
    .addColumn("gas_used", "text")
    .addColumn("gas_cost", "text")
    .addColumn("attempts", "integer", (c) => c.notNull())
    // When the nonce was first signed for, and when the current transaction was (overdue from then).
    .addColumn("signed_at", "text", (c) => c.notNull())
    .addColumn("resigned_at", "text", (c) => c.notNull())
    .addColumn("next_attempt_at", "text", (c) => c.notNull())
    .addColumn("last_error", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .addUniqueConstraint("flushes_network_nonce", ["network", "from_address", "nonce"])
    .execute();
  await db.schema.createIndex("flushes_open").on("flushes").columns(["network", "state"]).execute();
}

async function depositsTable(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("flush_deposits")
    .addColumn("id", "text", (c) => c.primaryKey())
    // One per confirmed payment to a forwarder.
    .addColumn("payment_id", "text", (c) => c.notNull().unique().references("invoice_payments.id"))
    .addColumn("invoice_id", "text", (c) => c.notNull().references("invoices.id"))
    .addColumn("network", "text", (c) => c.notNull())
    // The forwarder's id (bytes32: keccak256 of the invoice id) and its address.
    .addColumn("forwarder_id", "text", (c) => c.notNull())
    .addColumn("deposit_address", "text", (c) => c.notNull())
    .addColumn("factory", "text", (c) => c.notNull())
    // The catalog entry and its token contract (null: the native coin).
    .addColumn("currency", "text", (c) => c.notNull())
    .addColumn("token", "text")
    .addColumn("amount", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull().references("flush_deposit_states.state"))
    .addColumn("flush_id", "text", (c) => c.references("flushes.id"))
    // `Flushed` or `FlushFailed`, as the last mined flush logged it (null: not flushed yet).
    .addColumn("outcome", "text")
    // What reached the hot wallet for this forwarder and token (the factory's Flushed amount; a second deposit to one address may show 0).
    .addColumn("flushed_amount", "text")
    // Wei of flush gas this deposit bore (its shares of every flush it was in).
    .addColumn("gas_share", "text", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    // A deposit back from a FlushFailed waits until then (backing off), not the next pass.
    .addColumn("next_attempt_at", "text", (c) => c.notNull())
    .addColumn("last_error", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("flush_deposits_waiting")
    .on("flush_deposits")
    .columns(["network", "state", "created_at"])
    .execute();
  await db.schema.createIndex("flush_deposits_flush").on("flush_deposits").column("flush_id").execute();
}
