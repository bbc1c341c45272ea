// One currency on several networks (product §23): a catalog entry per currency and network. The
// `ticker` column stays each entry's key (what ledger rows, invoices and payouts reference, so every
// existing row keeps its meaning); `symbol` is the ticker the entries of one currency share; an
// invoice may be restricted to one entry (`currency_entry`), else it is payable on every entry; a
// payment's units beyond the currency's precision are kept (`dust`) for the operator's dust account.
import { type Kysely, sql } from "kysely";

export const currencyNetworks = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable("currencies").addColumn("symbol", "text").execute();
    await sql`update currencies set symbol = ticker`.execute(db);
    await db.schema.createIndex("currencies_symbol").on("currencies").column("symbol").execute();
    await db.schema.alterTable("invoices").addColumn("currency_entry", "text").execute();
    // What a payment on an entry with more decimals than its currency's precision leaves over.
    await db.schema.alterTable("invoice_payments").addColumn("dust", "text").execute();
  },
};
