// A merchant balance's ledger entries as the dashboard shows them: each with its cause, newest first by entry id (keyset).
import { merchantAccount } from "../domain/ledger.ts";
import { entryCause, type LedgerEntryCause } from "../domain/ledgerCause.ts";
import type { Tx } from "./store.ts";

export interface LedgerLine {
  /** The entry's id: increasing in posting order, the keyset of the pages. */
  id: number;
  movementId: string;
  cause: LedgerEntryCause;
  causeId: string;
  kind: string;
  memo: string | null;
  amountMinor: bigint;
  createdAt: string;
}

/** The merchant's entries in one currency, newest first, before entry `beforeId` when given. */
export async function listLedgerEntries(
  tx: Tx,
  merchantId: string,
  currency: string,
  beforeId: number | undefined,
  limit: number,
): Promise<LedgerLine[]> {
  let q = tx.db
    .selectFrom("ledger_entries")
    .innerJoin("ledger_movements", "ledger_movements.id", "ledger_entries.movement_id")
    .select([
      "ledger_entries.id",
      "ledger_entries.movement_id",
      "ledger_entries.amount",
      "ledger_movements.cause",
      "ledger_movements.cause_id",
      "ledger_movements.kind",
      "ledger_movements.memo",
      "ledger_movements.created_at",
    ])
    .where("ledger_entries.account", "=", merchantAccount(merchantId))
    .where("ledger_entries.currency", "=", currency);
  if (beforeId !== undefined) q = q.where("ledger_entries.id", "<", beforeId);
  const rows = await q.orderBy("ledger_entries.id", "desc").limit(limit).execute();
  return rows.map((r) => ({
    id: Number(r.id),
    movementId: r.movement_id,
    cause: entryCause(r.cause, r.kind),
    causeId: r.cause_id,
    kind: r.kind,
    memo: r.memo,
    amountMinor: BigInt(r.amount),
    createdAt: r.created_at,
  }));
}

/** The merchant's cached balance in one currency (zero when nothing moved in it). */
export async function merchantBalance(tx: Tx, merchantId: string, currency: string): Promise<bigint> {
  const row = await tx.db
    .selectFrom("ledger_balances")
    .select("balance")
    .where("account", "=", merchantAccount(merchantId))
    .where("currency", "=", currency)
    .executeTakeFirst();
  return row ? BigInt(row.balance) : 0n;
}
