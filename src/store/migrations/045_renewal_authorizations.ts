// Pre-authorized renewals (product §29): a payer's ReceiveWithAuthorization signed ahead for one period of a subscription, handed to the hot wallet when that period's invoice is made.
import type { Kysely } from "kysely";

export const renewalAuthorizations = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("renewal_authorizations")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("subscription_id", "text", (c) => c.notNull())
      .addColumn("period", "integer", (c) => c.notNull())
      .addColumn("network", "text", (c) => c.notNull())
      // The catalog entry the tokens are of (its internalTicker), as wallet_authorizations.currency.
      .addColumn("currency", "text", (c) => c.notNull())
      .addColumn("token", "text", (c) => c.notNull())
      .addColumn("from_address", "text", (c) => c.notNull())
      .addColumn("nonce", "text", (c) => c.notNull())
      // In the token's units, as text (bigint).
      .addColumn("value", "text", (c) => c.notNull())
      .addColumn("valid_after", "text", (c) => c.notNull())
      .addColumn("valid_before", "text", (c) => c.notNull())
      .addColumn("signature", "text", (c) => c.notNull())
      .addColumn("state", "text", (c) => c.notNull())
      // The wallet authorization it became when its invoice was made (state submitted).
      .addColumn("wallet_authorization_id", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    // The token's replay key: one signed authorization is one row.
    await db.schema
      .createIndex("renewal_authorizations_replay")
      .on("renewal_authorizations")
      .columns(["network", "token", "from_address", "nonce"])
      .unique()
      .execute();
    // One authorization per period, however often or in parallel the page posts.
    await db.schema
      .createIndex("renewal_authorizations_period")
      .on("renewal_authorizations")
      .columns(["subscription_id", "period"])
      .unique()
      .execute();
  },
};
