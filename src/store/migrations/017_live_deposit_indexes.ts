// Deposit indexes only where there is a deposit: the scanner's address lookup and the index's uniqueness concern live EVM invoices alone.
import { type Kysely, sql } from "kysely";

/**
 * Migration 012 indexed every invoice's deposit address and deposit index. A sandbox invoice's
 * address is derived from its random id, so each insert dirtied a random page of that index, and
 * a sandbox or card invoice has no deposit index at all: on SQLite CreateInvoice wrote three
 * times the bytes it wrote before issue 20 and lost about a quarter of its throughput. Only an
 * invoice with a deposit index (a live EVM one) is looked up by address (chainPayments.ts asks
 * `deposit_index IS NOT NULL`, which is what lets both stores use the partial index) or must keep
 * its index unique, so both indexes become partial. The same statements on both stores.
 */
export const liveDepositIndexes = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex("invoices_deposit_address").execute();
    await db.schema.dropIndex("invoices_deposit_index").execute();
    await sql`CREATE UNIQUE INDEX invoices_deposit_index ON invoices (deposit_index) WHERE deposit_index IS NOT NULL`.execute(
      db,
    );
    await sql`CREATE INDEX invoices_deposit_address ON invoices (deposit_address) WHERE deposit_index IS NOT NULL`.execute(
      db,
    );
  },
};
