// Invoices and their incoming payments (one row per payment, from which paid amounts derive).
import type { Kysely } from "kysely";

export const invoices = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("invoices")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("idempotency_key", "text")
      .addColumn("request_hash", "text")
      .addColumn("type", "text", (c) => c.notNull())
      .addColumn("status", "text", (c) => c.notNull())
      .addColumn("currency", "text", (c) => c.notNull().references("currencies.ticker"))
      .addColumn("settlement_currency", "text", (c) => c.notNull().references("currencies.ticker"))
      .addColumn("convert_currency", "text")
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("final_amount", "text", (c) => c.notNull())
      .addColumn("merchant_fee", "text", (c) => c.notNull())
      .addColumn("network_and_other_fees", "text", (c) => c.notNull())
      .addColumn("merchant_receive_amount", "text", (c) => c.notNull())
      .addColumn("callback_url", "text")
      .addColumn("success_url", "text")
      .addColumn("return_url", "text")
      .addColumn("fail_url", "text")
      .addColumn("order_no", "text")
      .addColumn("description", "text")
      .addColumn("api_source", "text")
      .addColumn("deposit_address", "text")
      .addColumn("expires_at", "text")
      // 1 once the expiry worker left a fully paid but unconfirmed invoice to its confirmations, so it is not picked again.
      .addColumn("expiry_deferred", "integer", (c) => c.notNull().defaultTo(0))
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      // The database decides idempotency: two processes racing on one key cannot both insert.
      .addUniqueConstraint("invoices_idempotency_key", ["merchant_id", "idempotency_key"])
      .execute();
    await db.schema
      .createIndex("invoices_order_no")
      .on("invoices")
      .columns(["merchant_id", "order_no", "created_at"])
      .execute();
    await db.schema
      .createIndex("invoices_due")
      .on("invoices")
      .columns(["status", "expiry_deferred", "expires_at"])
      .execute();

    await db.schema
      .createTable("invoice_payments")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("invoice_id", "text", (c) => c.notNull().references("invoices.id"))
      .addColumn("tx_id", "text", (c) => c.notNull())
      .addColumn("amount", "text", (c) => c.notNull())
      .addColumn("from_address", "text")
      .addColumn("confirmed", "integer", (c) => c.notNull())
      .addColumn("aml_status", "text", (c) => c.notNull())
      .addColumn("provider", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      // Also the index of an invoice's payments (invoice_id leads).
      .addUniqueConstraint("invoice_payments_tx", ["invoice_id", "tx_id"])
      .execute();
  },
};
