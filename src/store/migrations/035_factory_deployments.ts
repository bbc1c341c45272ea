// The forwarder factory's deployment transactions (product §24): signed by the hot wallet, stored before broadcast, followed until mined.
import { type Kysely, sql } from "kysely";

export const factoryDeployments = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("factory_deployments")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("network", "text", (c) => c.notNull().references("networks.name"))
      // The factory's address and its owner, the hot wallet that signed (both lowercase).
      .addColumn("factory", "text", (c) => c.notNull())
      .addColumn("from_address", "text", (c) => c.notNull())
      .addColumn("nonce", "integer", (c) => c.notNull())
      .addColumn("hash", "text", (c) => c.notNull())
      // The signed bytes, kept so the same transaction is broadcast again, never a second one.
      .addColumn("raw", "text", (c) => c.notNull())
      // signed (until mined) | mined | failed (reverted, or no code after it) | replaced (another transaction took the nonce).
      .addColumn("state", "text", (c) => c.notNull())
      .addColumn("gas_wei", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("updated_at", "text", (c) => c.notNull())
      .execute();
    // At most one deployment in flight per network: a second request answers it instead of signing another.
    await db.schema
      .createIndex("factory_deployments_one_signed")
      .on("factory_deployments")
      .column("network")
      .unique()
      .where(sql.ref("state"), "=", "signed")
      .execute();
  },
};
