// Stray payments listed by the customer's deposit address they reached (GET /admin/v1/stray-payments?depositAddressId=), as by invoice.
import type { Kysely } from "kysely";

export const strayPaymentsByAddress = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex("stray_payments_deposit_address")
      .on("stray_payments")
      .column("deposit_address_id")
      .execute();
  },
};
