// Forwarder deposit addresses (product §24): which invoices have one, and where the factory is deployed.
import type { Kysely } from "kysely";

export const forwarders = {
  async up(db: Kysely<unknown>): Promise<void> {
    // The factory (lowercase address) whose CREATE2 forwarder the invoice's deposit address is; null:
    // a derived address (deposit_index, made before forwarders) or a sandbox address.
    await db.schema.alterTable("invoices").addColumn("deposit_factory", "text").execute();
    // The factory found deployed on this network (lowercase address, its code checked) and when; null:
    // not deployed, so live crypto on the network stays behind the gate.
    await db.schema.alterTable("networks").addColumn("factory_address", "text").execute();
    await db.schema.alterTable("networks").addColumn("factory_deployed_at", "text").execute();
  },
};
