// Live payouts on EVM networks: hot-wallet nonces allocated in the database, the signed transactions of each payout, and the operator's fee settings.
import { type Kysely, sql } from "kysely";

export const chainPayouts = {
  async up(db: Kysely<unknown>): Promise<void> {
    // Per network, what the operator allows a payout transaction to cost and how long one may
    // wait unmined before it is replaced.
    await db.schema
      .createTable("network_payout_settings")
      .addColumn("network", "text", (c) => c.primaryKey())
      .addColumn("max_fee_per_gas_gwei", "text", (c) => c.notNull())
      .addColumn("replace_after_seconds", "integer", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();

    await db.schema
      .createTable("payout_transactions")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("payout_request_id", "text", (c) => c.notNull().references("payouts.request_id"))
      .addColumn("network", "text", (c) => c.notNull())
      .addColumn("chain_id", "integer", (c) => c.notNull())
      .addColumn("from_address", "text", (c) => c.notNull())
      .addColumn("nonce", "integer", (c) => c.notNull())
      .addColumn("hash", "text", (c) => c.notNull().unique())
      // The signed raw transaction: the exact bytes broadcast, again and again if need be.
      .addColumn("raw", "text", (c) => c.notNull())
      .addColumn("to_address", "text", (c) => c.notNull())
      // What the payout carries: the token contract (null: the native coin), the recipient and
      // the amount in the currency's minor units.
      .addColumn("asset_contract", "text")
      .addColumn("recipient", "text", (c) => c.notNull())
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("value_wei", "text", (c) => c.notNull())
      .addColumn("gas_limit", "text", (c) => c.notNull())
      .addColumn("max_fee_per_gas", "text", (c) => c.notNull())
      .addColumn("max_priority_fee_per_gas", "text", (c) => c.notNull())
      // The transaction this one replaces at the same nonce (null for the first of its nonce).
      .addColumn("replaces_id", "text", (c) => c.references("payout_transactions.id"))
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("broadcast_at", "text")
      .addColumn("broadcast_count", "integer", (c) => c.notNull())
      .addColumn("last_error", "text")
      .addColumn("block_number", "text")
      .addColumn("block_hash", "text")
      // `success` or `reverted`, from the receipt.
      .addColumn("receipt_status", "text")
      .addColumn("gas_used", "text")
      .addColumn("effective_gas_price", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    // A nonce starts one payout's chain of transactions only: the first transaction at a nonce is
    // unique, and replacements name what they replace.
    await db.schema
      .createIndex("payout_transactions_first_at_nonce")
      .on("payout_transactions")
      .columns(["network", "from_address", "nonce"])
      .unique()
      .where(sql.ref("replaces_id"), "is", null)
      .execute();
    await db.schema
      .createIndex("payout_transactions_payout")
      .on("payout_transactions")
      .column("payout_request_id")
      .execute();
    // The worker's look-up: transactions not yet final, per network, by nonce.
    await db.schema
      .createIndex("payout_transactions_open")
      .on("payout_transactions")
      .columns(["network", "nonce"])
      .where(sql<boolean>`state in ('signed', 'broadcast', 'dropped', 'mined')`)
      .execute();
  },
};
