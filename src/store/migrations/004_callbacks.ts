// Callback outbox: one row per invoice event to deliver, and one row per delivery attempt.
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";
import { autoIncrementId } from "../dialect.ts";

export function callbacks(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable("callback_events")
        // seq orders the events of one invoice: they are delivered in the order they were recorded.
        .addColumn("seq", autoIncrementId(dialect), (c) =>
          dialect === "sqlite" ? c.primaryKey().autoIncrement() : c.primaryKey(),
        )
        .addColumn("id", "text", (c) => c.notNull().unique())
        .addColumn("invoice_id", "text", (c) => c.notNull().references("invoices.id"))
        .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
        .addColumn("type", "text", (c) => c.notNull())
        .addColumn("url", "text", (c) => c.notNull())
        .addColumn("destination", "text", (c) => c.notNull())
        .addColumn("body", "text", (c) => c.notNull())
        .addColumn("status", "text", (c) => c.notNull())
        .addColumn("attempt_count", "integer", (c) => c.notNull())
        .addColumn("schedule_position", "integer", (c) => c.notNull())
        .addColumn("next_attempt_at", "text")
        .addColumn("lease_until", "text")
        .addColumn("claim_token", "text")
        .addColumn("delivered_at", "text")
        .addColumn("created_at", "text", (c) => c.notNull())
        .addColumn("updated_at", "text", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("callback_events_due")
        .on("callback_events")
        .columns(["status", "next_attempt_at"])
        .execute();
      await db.schema
        .createIndex("callback_events_invoice")
        .on("callback_events")
        .columns(["invoice_id", "seq"])
        .execute();

      await db.schema
        .createTable("callback_attempts")
        .addColumn("id", autoIncrementId(dialect), (c) =>
          dialect === "sqlite" ? c.primaryKey().autoIncrement() : c.primaryKey(),
        )
        .addColumn("event_id", "text", (c) => c.notNull().references("callback_events.id"))
        .addColumn("number", "integer", (c) => c.notNull())
        .addColumn("started_at", "text", (c) => c.notNull())
        .addColumn("duration_ms", "integer", (c) => c.notNull())
        .addColumn("status_code", "integer")
        .addColumn("error", "text")
        .addColumn("response_body", "text")
        // Also the index of an event's attempts (event_id leads).
        .addUniqueConstraint("callback_attempts_number", ["event_id", "number"])
        .execute();
    },
  };
}
