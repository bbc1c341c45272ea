// Disputes above their payment (issue 42): the amount the provider named, kept when the dispute was capped at its payment, the operator's flag.
import type { Kysely } from "kysely";

export const disputeProviderAmount = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable("card_disputes").addColumn("provider_amount", "text").execute();
  },
};
