// The hot wallet's nonce allocator remembers whose nonces it counts: a new WALLET_MNEMONIC starts from its own chain nonce.
import type { Kysely } from "kysely";

export const hotNonceAddress = {
  async up(db: Kysely<unknown>): Promise<void> {
    // Null: counted before this migration, for whatever the hot wallet was then (taken as unknown,
    // so the next allocation trusts the chain's nonce when it is higher, as before).
    await db.schema.alterTable("networks").addColumn("hot_nonce_address", "text").execute();
  },
};
