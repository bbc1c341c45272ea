// Live money on EVM networks (product §12): networks and their scanners, deposit-address indexes, chain payments, sweeps, late-payment resolutions.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

// longer than 70 lines: a migration is the schema it creates, statement after statement in the order
// they must run; it is frozen once released, so it is not restructured.
export function evm(dialect: Dialect) {
  return {
    // longer than 70 lines: the migration's schema, as said above.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("networks")
        // The catalog's `network` name (e.g. `ethereum`).
        .addColumn("name", "text", (c) => c.primaryKey())
        .addColumn("chain_id", "bigint", (c) => c.notNull())
        // Sealed with SECRET_ENCRYPTION_KEY (the URL may carry a provider key); bound to the network name.
        .addColumn("rpc_url_sealed", "text", (c) => c.notNull())
        .addColumn("confirmations", "integer", (c) => c.notNull())
        .addColumn("explorer_url", "text")
        // The scanner's checkpoint: the last block scanned and its hash.
        .addColumn("scanned_block", "bigint")
        .addColumn("scanned_hash", "text")
        // The node's head as the scanner last saw it (depth of payments, lag).
        .addColumn("head_block", "bigint")
        .addColumn("head_seen_at", "text")
        // One scanner per network across processes: whoever holds an unexpired lease.
        .addColumn("lease_owner", "text")
        .addColumn("lease_until", "text")
        // The last failure of the node (unreachable, timeout, wrong chain id), cleared by a good scan.
        .addColumn("node_error", "text")
        .addColumn("node_error_at", "text")
        // Next nonce of the hot wallet on this network: sweeps' gas and payouts share it.
        .addColumn("hot_nonce", "bigint")
        .addColumn("created_at", "text", (c) => c.notNull())
        .addColumn("updated_at", "text", (c) => c.notNull())
        .execute();

      // Hashes of recently scanned blocks: a hash that changed is a reorganisation.
      await db.schema
        .createTable("scanned_blocks")
        .addColumn("network", "text", (c) => c.notNull().references("networks.name"))
        .addColumn("number", "bigint", (c) => c.notNull())
        .addColumn("hash", "text", (c) => c.notNull())
        .addPrimaryKeyConstraint("scanned_blocks_pk", ["network", "number"])
        .execute();

      // Deposit indexes: a sequence on PostgreSQL, a counter row on SQLite (whose writes are serialized).
      if (dialect === "postgres") {
        await sql`CREATE SEQUENCE deposit_index_seq START WITH 1 MINVALUE 1 MAXVALUE 2147483647 NO CYCLE`.execute(db);
      } else {
        await db.schema
          .createTable("counters")
          .addColumn("name", "text", (c) => c.primaryKey())
          .addColumn("value", "integer", (c) => c.notNull())
          .execute();
        await sql`INSERT INTO counters (name, value) VALUES ('deposit_index', 0)`.execute(db);
      }

      await db.schema.alterTable("invoices").addColumn("deposit_index", "bigint").execute();
      await db.schema.createIndex("invoices_deposit_index").unique().on("invoices").column("deposit_index").execute();
      // Deposits are found by address; sandbox addresses are unique too (derived from the invoice id).
      await db.schema.createIndex("invoices_deposit_address").on("invoices").column("deposit_address").execute();
      // A late, partial or stranded payment resolved by the operator or the owner: once only.
      await db.schema.alterTable("invoices").addColumn("resolution", "text").execute();
      await db.schema.alterTable("invoices").addColumn("resolved_at", "text").execute();

      // Chain payments: tx_id is `<hash>` (native) or `<hash>:<logIndex>` (token), unique per network.
      await db.schema.alterTable("invoice_payments").addColumn("network", "text").execute();
      await db.schema.alterTable("invoice_payments").addColumn("tx_hash", "text").execute();
      await db.schema.alterTable("invoice_payments").addColumn("log_index", "integer").execute();
      await db.schema.alterTable("invoice_payments").addColumn("block_number", "bigint").execute();
      await db.schema.alterTable("invoice_payments").addColumn("block_hash", "text").execute();
      // 1 when the payment reached the invoice after it stopped taking payments (product §12 late payments).
      await db.schema
        .alterTable("invoice_payments")
        .addColumn("late", "integer", (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createIndex("invoice_payments_chain")
        .unique()
        .on("invoice_payments")
        .columns(["network", "tx_id"])
        .execute();
      // Unconfirmed chain payments by block: what a reorganisation drops, what confirmations promote.
      await db.schema
        .createIndex("invoice_payments_unconfirmed")
        .on("invoice_payments")
        .columns(["network", "confirmed", "block_number"])
        .execute();

      await db.schema
        .createTable("sweeps")
        .addColumn("id", "text", (c) => c.primaryKey())
        // One sweep per confirmed payment.
        .addColumn("payment_id", "text", (c) => c.notNull().unique().references("invoice_payments.id"))
        .addColumn("invoice_id", "text", (c) => c.notNull())
        .addColumn("network", "text", (c) => c.notNull())
        .addColumn("currency", "text", (c) => c.notNull())
        .addColumn("deposit_index", "bigint", (c) => c.notNull())
        .addColumn("deposit_address", "text", (c) => c.notNull())
        // Minor units received; what reached the hot wallet once completed.
        .addColumn("amount", "text", (c) => c.notNull())
        .addColumn("swept_amount", "text")
        // `pending`, `funding` (gas sent to the deposit address), `sweeping`, `completed`, `failed`.
        .addColumn("state", "text", (c) => c.notNull())
        .addColumn("funding_tx", "text")
        .addColumn("funding_signed", "text")
        .addColumn("funding_amount", "text")
        .addColumn("sweep_tx", "text")
        .addColumn("sweep_signed", "text")
        // Wei the sweep's transactions cost, posted to the operator's network-fee account.
        .addColumn("gas_cost", "text")
        .addColumn("attempts", "integer", (c) => c.notNull())
        .addColumn("next_attempt_at", "text", (c) => c.notNull())
        .addColumn("last_error", "text")
        .addColumn("created_at", "text", (c) => c.notNull())
        .addColumn("updated_at", "text", (c) => c.notNull())
        .execute();
      await db.schema.createIndex("sweeps_due").on("sweeps").columns(["state", "next_attempt_at"]).execute();
    },
  };
}
