// Merchant API extensions (product §15): default callback URL, the events table, keyset list indexes, callbacks for any subject.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

// longer than 70 lines: a migration is the schema it creates, statement after statement in the order
// they must run; it is frozen once released, so it is not restructured.
export function merchantApiExtensions(dialect: Dialect) {
  return {
    // longer than 70 lines: the migration's schema, as said above.
    async up(db: Kysely<unknown>): Promise<void> {
      // Where withdrawal and refund events go (checked like an invoice's callback_url); null: nowhere.
      await db.schema.alterTable("merchants").addColumn("default_callback_url", "text").execute();

      // Lists page newest first by (created_at, id) within one merchant: one index range per page.
      await db.schema
        .createIndex("invoices_merchant_created")
        .on("invoices")
        .columns(["merchant_id", "created_at", "id"])
        .execute();
      await db.schema
        .createIndex("withdrawals_merchant_created")
        .on("withdrawals")
        .columns(["merchant_id", "created_at", "request_id"])
        .execute();
      await db.schema
        .createIndex("refunds_merchant_created")
        .on("refunds")
        .columns(["merchant_id", "created_at", "request_id"])
        .execute();

      // Every event of a merchant, written in the transaction of the change it reports, whether or
      // not a callback URL receives it. `body` is the exact text of the event (and of its callback).
      await db.schema
        .createTable("events")
        .addColumn("id", "text", (c) => c.primaryKey())
        .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
        .addColumn("type", "text", (c) => c.notNull())
        // The invoice id, or the request id (lowercased) of a withdrawal or refund.
        .addColumn("subject_id", "text", (c) => c.notNull())
        .addColumn("body", "text", (c) => c.notNull())
        .addColumn("created_at", "text", (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex("events_merchant_created")
        .on("events")
        .columns(["merchant_id", "created_at", "id"])
        .execute();

      // Callbacks now deliver events of withdrawals and refunds too: a subject that is not an
      // invoice. invoice_id becomes nullable (SQLite: the table is rebuilt, the documented way) and
      // subject_id orders delivery per subject as invoice_id did per invoice.
      if (dialect === "postgres") {
        await sql`alter table callback_events alter column invoice_id drop not null`.execute(db);
        await sql`alter table callback_events add column subject_id text`.execute(db);
        await sql`update callback_events set subject_id = invoice_id`.execute(db);
        await sql`alter table callback_events alter column subject_id set not null`.execute(db);
      } else {
        // Off while the table is swapped (it cannot change inside a transaction); checked, then restored.
        const { rows } = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db);
        const enforced = Number(rows[0]?.foreign_keys ?? 0) === 1;
        await sql`pragma foreign_keys = off`.execute(db);
        await sql`begin`.execute(db);
        try {
          await sql`create table callback_events_rebuilt (
            seq integer primary key autoincrement,
            id text not null unique,
            invoice_id text references invoices(id),
            subject_id text not null,
            merchant_id text not null references merchants(id),
            type text not null,
            url text not null,
            destination text not null,
            body text not null,
            status text not null,
            attempt_count integer not null,
            schedule_position integer not null,
            next_attempt_at text,
            lease_until text,
            claim_token text,
            delivered_at text,
            created_at text not null,
            updated_at text not null
          )`.execute(db);
          await sql`insert into callback_events_rebuilt (seq, id, invoice_id, subject_id, merchant_id, type, url,
              destination, body, status, attempt_count, schedule_position, next_attempt_at, lease_until, claim_token,
              delivered_at, created_at, updated_at)
            select seq, id, invoice_id, invoice_id, merchant_id, type, url, destination, body, status, attempt_count,
              schedule_position, next_attempt_at, lease_until, claim_token, delivered_at, created_at, updated_at
            from callback_events`.execute(db);
          await sql`drop table callback_events`.execute(db);
          await sql`alter table callback_events_rebuilt rename to callback_events`.execute(db);
          await sql`create index callback_events_due on callback_events (status, next_attempt_at)`.execute(db);
          // The operator's list of an invoice's callbacks (PostgreSQL keeps its index of migration 004).
          await sql`create index callback_events_invoice on callback_events (invoice_id, seq)`.execute(db);
          const broken = await sql`pragma foreign_key_check`.execute(db);
          if (broken.rows.length > 0) throw new Error("callback_events rebuild broke a foreign key");
          await sql`commit`.execute(db);
        } catch (error) {
          await sql`rollback`.execute(db);
          throw error;
        } finally {
          if (enforced) await sql`pragma foreign_keys = on`.execute(db);
        }
      }
      await db.schema
        .createIndex("callback_events_subject")
        .on("callback_events")
        .columns(["subject_id", "seq"])
        .execute();

      // Invoice events recorded before this migration become events of the list.
      await sql`insert into events (id, merchant_id, type, subject_id, body, created_at)
        select id, merchant_id, type, invoice_id, body, created_at from callback_events`.execute(db);
    },
  };
}
