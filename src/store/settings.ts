// Service settings kept in the store (the admin token hash, first-start marker).
import type { Tx } from "./store.ts";

export async function readSetting(tx: Tx, key: string): Promise<string | null> {
  const r = await tx.db.selectFrom("settings").select("value").where("key", "=", key).executeTakeFirst();
  return r?.value ?? null;
}

/** Writes a setting only if it is absent; answers whether this call wrote it (first writer wins across processes). */
export async function insertSettingOnce(tx: Tx, key: string, value: string): Promise<boolean> {
  const result = await tx.db
    .insertInto("settings")
    .values({ key, value })
    .onConflict((oc) => oc.column("key").doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}
