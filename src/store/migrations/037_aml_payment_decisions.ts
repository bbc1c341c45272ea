// The operator's screening decision may name one payment (a flagged late payment, product §21): the audit row records which.
import type { Kysely } from "kysely";

/**
 * A late payment to an invoice that stopped taking payments is decided on its own (the invoice is
 * not in aml_check): `payment_id` names it; null for a decision on an invoice in aml_check.
 */
export const amlPaymentDecisions = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable("aml_decisions").addColumn("payment_id", "text").execute();
  },
};
