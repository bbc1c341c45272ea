// Ledger repository: posts balanced movements atomically and keeps merchant balances, never negative.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { isMerchantAccount, type Movement, merchantAccount, nextBalance } from "../domain/ledger.ts";
import { assert, err, ok, type Result } from "../domain/result.ts";
import type { Tx } from "./store.ts";

export type PostOutcome = Result<{ movementId: string }, "insufficient_balance" | "already_posted">;

/**
 * Posts a movement inside the caller's transaction. Merchant balance rows are locked in a fixed
 * order (PostgreSQL `FOR UPDATE`; SQLite transactions are serialized by its write lock) and
 * checked before anything is written, so a refused movement leaves no trace. A movement whose
 * (cause, cause id, kind) was already posted is not posted again.
 */
export async function postMovement(tx: Tx, movement: Movement, now: string): Promise<PostOutcome> {
  const deltas = new Map<string, { account: string; currency: string; delta: bigint }>();
  for (const posting of movement.postings) {
    if (!isMerchantAccount(posting.account)) continue;
    const key = `${posting.account}\u0000${posting.currency}`;
    const current = deltas.get(key) ?? { account: posting.account, currency: posting.currency, delta: 0n };
    deltas.set(key, { ...current, delta: current.delta + posting.amount });
  }
  const ordered = [...deltas.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);

  const updates: { account: string; currency: string; balance: bigint }[] = [];
  for (const { account, currency, delta } of ordered) {
    await tx.db
      .insertInto("ledger_balances")
      .values({ account, currency, balance: "0", updated_at: now })
      .onConflict((oc) => oc.columns(["account", "currency"]).doNothing())
      .execute();
    const locked = await tx.db
      .selectFrom("ledger_balances")
      .select("balance")
      .where("account", "=", account)
      .where("currency", "=", currency)
      .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
      .executeTakeFirstOrThrow();
    const next = nextBalance(account, BigInt(locked.balance), delta);
    if (!next.ok) return err("insufficient_balance", `${currency} balance does not cover ${-delta} minor units`);
    updates.push({ account, currency, balance: next.value });
  }

  const movementId = randomUUID();
  const inserted = await tx.db
    .insertInto("ledger_movements")
    .values({
      id: movementId,
      cause: movement.cause,
      cause_id: movement.causeId,
      kind: movement.kind,
      memo: movement.memo,
      created_at: now,
    })
    .onConflict((oc) => oc.columns(["cause", "cause_id", "kind"]).doNothing())
    .executeTakeFirst();
  if (inserted.numInsertedOrUpdatedRows === 0n) return err("already_posted");

  await tx.db
    .insertInto("ledger_entries")
    .values(
      movement.postings.map((p) => ({
        movement_id: movementId,
        account: p.account,
        currency: p.currency,
        amount: p.amount.toString(),
      })),
    )
    .execute();
  for (const u of updates) {
    await tx.db
      .updateTable("ledger_balances")
      .set({ balance: u.balance.toString(), updated_at: now })
      .where("account", "=", u.account)
      .where("currency", "=", u.currency)
      .execute();
  }
  return ok({ movementId });
}

/** A merchant's available balance per currency (only currencies that ever moved). */
export async function merchantBalances(tx: Tx, merchantId: string): Promise<Map<string, bigint>> {
  const rows = await tx.db
    .selectFrom("ledger_balances")
    .select(["currency", "balance"])
    .where("account", "=", merchantAccount(merchantId))
    .execute();
  return new Map(rows.map((r) => [r.currency, BigInt(r.balance)]));
}

export interface LedgerAudit {
  movements: number;
  entries: number;
  /** Sum of all entries per currency: zero in a healthy ledger. */
  sumsByCurrency: Map<string, bigint>;
  /** Merchant balance rows that disagree with the sum of their entries. */
  mismatchedBalances: { account: string; currency: string; cached: bigint; fromEntries: bigint }[];
  negativeMerchantBalances: { account: string; currency: string; balance: bigint }[];
}

/**
 * Recomputes every balance from the entries (exactly, in bigint) and compares them with the
 * cached merchant balances. Used by tests and by operators; reads the whole ledger.
 */
export async function auditLedger(tx: Tx): Promise<LedgerAudit> {
  const entries = await tx.db.selectFrom("ledger_entries").select(["account", "currency", "amount"]).execute();
  const movements = await tx.db
    .selectFrom("ledger_movements")
    .select(sql<number>`count(*)`.as("n"))
    .executeTakeFirstOrThrow();
  const sumsByCurrency = new Map<string, bigint>();
  const byAccount = new Map<string, bigint>();
  for (const e of entries) {
    const amount = BigInt(e.amount);
    sumsByCurrency.set(e.currency, (sumsByCurrency.get(e.currency) ?? 0n) + amount);
    const key = `${e.account}\u0000${e.currency}`;
    byAccount.set(key, (byAccount.get(key) ?? 0n) + amount);
  }
  const balances = await tx.db.selectFrom("ledger_balances").selectAll().execute();
  const mismatchedBalances: LedgerAudit["mismatchedBalances"] = [];
  const negativeMerchantBalances: LedgerAudit["negativeMerchantBalances"] = [];
  const seen = new Set<string>();
  for (const b of balances) {
    const key = `${b.account}\u0000${b.currency}`;
    seen.add(key);
    const cached = BigInt(b.balance);
    const fromEntries = byAccount.get(key) ?? 0n;
    if (cached !== fromEntries)
      mismatchedBalances.push({ account: b.account, currency: b.currency, cached, fromEntries });
    if (cached < 0n) negativeMerchantBalances.push({ account: b.account, currency: b.currency, balance: cached });
  }
  for (const [key, fromEntries] of byAccount) {
    const [account = "", currency = ""] = key.split("\u0000");
    if (isMerchantAccount(account) && !seen.has(key)) {
      mismatchedBalances.push({ account, currency, cached: 0n, fromEntries });
    }
  }
  assert(entries.length === 0 || Number(movements.n) > 0, "entries belong to movements");
  return {
    movements: Number(movements.n),
    entries: entries.length,
    sumsByCurrency,
    mismatchedBalances,
    negativeMerchantBalances,
  };
}
