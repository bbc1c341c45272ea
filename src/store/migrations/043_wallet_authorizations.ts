// Paying with a wallet (product §28): a catalog entry's authorization (EIP-3009 with its EIP-712 domain, or Permit2), and the payers' signed authorizations the hot wallet submits through the outbox.
import { type Kysely, sql } from "kysely";
import { DEFAULT_CATALOG } from "../../domain/currencies.ts";
import { serializeCatalogAuthorization } from "../../domain/walletAuthorization.ts";

export const walletAuthorizations = {
  async up(db: Kysely<unknown>): Promise<void> {
    // JSON `{ kind: "eip3009", name, version }` or `{ kind: "permit2" }`; null: the entry takes transfers only.
    await db.schema.alterTable("currencies").addColumn("wallet_authorization", "text").execute();
    // The default catalog's tokens (USDC, USDT on Ethereum) take signatures in a store made before too.
    for (const entry of DEFAULT_CATALOG) {
      if (entry.authorization === undefined || entry.contractAddress === null) continue;
      await sql`update currencies set wallet_authorization = ${serializeCatalogAuthorization(entry.authorization)}
        where contract_address = ${entry.contractAddress} and network = ${entry.network}`.execute(db);
    }
    await db.schema
      .createTable("wallet_authorizations")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("invoice_id", "text", (c) => c.notNull())
      .addColumn("network", "text", (c) => c.notNull())
      .addColumn("currency", "text", (c) => c.notNull())
      .addColumn("kind", "text", (c) => c.notNull())
      .addColumn("token", "text", (c) => c.notNull())
      .addColumn("from_address", "text", (c) => c.notNull())
      .addColumn("nonce", "text", (c) => c.notNull())
      .addColumn("value", "text", (c) => c.notNull())
      .addColumn("valid_after", "text", (c) => c.notNull())
      .addColumn("valid_before", "text", (c) => c.notNull())
      .addColumn("signature", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("failure", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    // One authorization is one row, however often or in parallel it is posted: the token's own replay key.
    await db.schema
      .createIndex("wallet_authorizations_replay")
      .on("wallet_authorizations")
      .columns(["network", "token", "from_address", "nonce"])
      .unique()
      .execute();
    await db.schema
      .createIndex("wallet_authorizations_open")
      .on("wallet_authorizations")
      .columns(["state", "network"])
      .execute();
    await db.schema
      .createIndex("wallet_authorizations_invoice")
      .on("wallet_authorizations")
      .columns(["invoice_id"])
      .execute();
  },
};
