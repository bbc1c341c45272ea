// Foundation tables: settings, currency catalog, merchants, API keys, withdrawal methods, the ledger.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";
import { autoIncrementId } from "../dialect.ts";

// longer than 70 lines: a migration is the schema it creates, statement after statement in the order
// they must run; it is frozen once released, so it is not restructured.
export function foundation(dialect: Dialect) {
  return {
    // longer than 70 lines: the migration's schema, as said above.
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("settings")
        .addColumn("key", "text", (c) => c.primaryKey())
        .addColumn("value", "text", (c) => c.notNull())
        .execute();

      await db.schema
        .createTable("currencies")
        .addColumn("ticker", "text", (c) => c.primaryKey())
        .addColumn("full_name", "text", (c) => c.notNull())
        .addColumn("network", "text", (c) => c.notNull())
        .addColumn("contract_address", "text")
        .addColumn("type", "text", (c) => c.notNull())
        .addColumn("icon", "text", (c) => c.notNull())
        .addColumn("icon_dark", "text", (c) => c.notNull())
        .addColumn("internal_ticker", "text", (c) => c.notNull())
        .addColumn("decimals", "integer", (c) => c.notNull())
        .addColumn("network_fee", "text", (c) => c.notNull())
        .addColumn("withdrawal_min", "text", (c) => c.notNull())
        .addColumn("withdrawal_max", "text", (c) => c.notNull())
        .addColumn("rate_usd", "text", (c) => c.notNull())
        .addColumn("sort_order", "integer", (c) => c.notNull())
        .execute();

      await db.schema
        .createTable("merchants")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("email", "text", (c) => c.notNull().unique())
        .addColumn("merchant_name", "text")
        .addColumn("director_name", "text")
        .addColumn("website", "text")
        .addColumn("logo", "text")
        .addColumn("whitelabeling", "integer", (c) => c.notNull())
        .addColumn("status", "text", (c) => c.notNull())
        .addColumn("fee_percent", "text", (c) => c.notNull())
        .addColumn("fees_paid_by", "text", (c) => c.notNull())
        .addColumn("callback_secret", "text", (c) => c.notNull())
        .addColumn("callback_secret_previous", "text")
        .addColumn("callback_secret_rotated_at", "text")
        .addColumn("created_at", "text", (c) => c.notNull())
        .addColumn("updated_at", "text", (c) => c.notNull())
        .execute();

      await db.schema
        .createTable("api_keys")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
        .addColumn("key_hash", "text", (c) => c.notNull().unique())
        .addColumn("key_prefix", "text", (c) => c.notNull())
        .addColumn("secret_encrypted", "text")
        .addColumn("legacy", "integer", (c) => c.notNull())
        .addColumn("created_at", "text", (c) => c.notNull())
        .addColumn("revoked_at", "text")
        .execute();
      await db.schema.createIndex("api_keys_merchant").on("api_keys").column("merchant_id").execute();

      await db.schema
        .createTable("withdrawal_methods")
        .addColumn("id", autoIncrementId(dialect), (c) =>
          dialect === "sqlite" ? c.primaryKey().autoIncrement() : c.primaryKey(),
        )
        .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
        .addColumn("currency", "text", (c) => c.notNull().references("currencies.ticker"))
        .addColumn("address", "text", (c) => c.notNull())
        .addColumn("label", "text")
        .addColumn("created_at", "text", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("withdrawal_methods_merchant")
        .on("withdrawal_methods")
        .column("merchant_id")
        .execute();

      await db.schema
        .createTable("ledger_movements")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("cause", "text", (c) => c.notNull())
        .addColumn("cause_id", "text", (c) => c.notNull())
        .addColumn("kind", "text", (c) => c.notNull())
        .addColumn("memo", "text")
        .addColumn("created_at", "text", (c) => c.notNull())
        // One movement per (cause, kind): the database, not the process, makes credits happen once.
        .addUniqueConstraint("ledger_movements_cause_once", ["cause", "cause_id", "kind"])
        .execute();

      await db.schema
        .createTable("ledger_entries")
        .addColumn("id", autoIncrementId(dialect), (c) =>
          dialect === "sqlite" ? c.primaryKey().autoIncrement() : c.primaryKey(),
        )
        .addColumn("movement_id", "text", (c) => c.notNull().references("ledger_movements.id"))
        .addColumn("account", "text", (c) => c.notNull())
        .addColumn("currency", "text", (c) => c.notNull())
        .addColumn("amount", "text", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("ledger_entries_account")
        .on("ledger_entries")
        .columns(["account", "currency"])
        .execute();
      await db.schema.createIndex("ledger_entries_movement").on("ledger_entries").column("movement_id").execute();

      await db.schema
        .createTable("ledger_balances")
        .addColumn("account", "text", (c) => c.notNull())
        .addColumn("currency", "text", (c) => c.notNull())
        .addColumn("balance", "text", (c) => c.notNull())
        .addColumn("updated_at", "text", (c) => c.notNull())
        .addPrimaryKeyConstraint("ledger_balances_pk", ["account", "currency"])
        // Last line of defence behind the domain rule: a merchant balance is never negative.
        .addCheckConstraint("ledger_balances_merchant_not_negative", sqlCheckNotNegative())
        .execute();
    },
  };
}

function sqlCheckNotNegative() {
  return sql`account NOT LIKE 'merchant:%' OR balance NOT LIKE '-%'`;
}
