// Sweep gas fundings are followed like payouts (product §19): when each was signed (its age, and when it is overdue), and the earlier fundings a higher fee replaced at the same nonce.
import type { Kysely } from "kysely";

export const sweepFundings = {
  async up(db: Kysely<unknown>): Promise<void> {
    // When the funding's nonce was first signed for (null: before this migration; the sweep's update time stands in).
    await db.schema.alterTable("sweeps").addColumn("funding_signed_at", "text").execute();
    // When the current funding transaction was signed: it is replaced with a higher fee once overdue from then.
    await db.schema.alterTable("sweeps").addColumn("funding_resigned_at", "text").execute();
    // JSON array of the earlier signed fundings at the same nonce (any one of them may still be mined).
    await db.schema.alterTable("sweeps").addColumn("funding_replaced", "text").execute();
  },
};
