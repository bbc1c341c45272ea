// Decisions and screening of customers' deposits (product §30, §21): a deposit's screening attempts and next try, and the audit of every decision on a deposit (the operator's in aml_check, the merchant's on a held one).
import type { Kysely } from "kysely";

export const depositScreening = {
  async up(db: Kysely<unknown>): Promise<void> {
    // As invoice payments' (migration 030): a sender not screened yet is tried again after screen_after.
    await db.schema
      .alterTable("deposits")
      .addColumn("screening_attempts", "integer", (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable("deposits").addColumn("screen_after", "text").execute();
    await db.schema.createIndex("deposits_screening").on("deposits").columns(["screening", "screen_after"]).execute();
    // Who decided what on which deposit, when: aml_decisions names an invoice, so deposits have their own.
    await db.schema
      .createTable("deposit_decisions")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("deposit_id", "text", (c) => c.notNull().references("deposits.id"))
      // `clear` or `block` (the operator), `credit` or `refund` (the merchant).
      .addColumn("decision", "text", (c) => c.notNull())
      // `operator`, or `merchant:{id}`.
      .addColumn("actor", "text", (c) => c.notNull())
      .addColumn("status_after", "text", (c) => c.notNull())
      .addColumn("reason", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("deposit_decisions_deposit").on("deposit_decisions").column("deposit_id").execute();
  },
};
