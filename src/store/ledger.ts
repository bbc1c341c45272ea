// Ledger repository: posts balanced movements atomically and keeps merchant balances, never negative.
import { sql } from "kysely";
import { newRowId } from "../domain/ids.ts";
import { isMerchantAccount, type Movement, merchantAccount, nextBalance } from "../domain/ledger.ts";
import { assert, err, ok, type Result } from "../domain/result.ts";
import { preparedQuery, preparedStatement } from "./prepared.ts";
import type { Tx } from "./store.ts";

// Every debit and credit runs these: compiled once (see prepared.ts).
const ensureBalanceRow = preparedStatement(["account", "currency", "now"] as const, (db, a) =>
  db
    .insertInto("ledger_balances")
    .values({ account: a.account, currency: a.currency, balance: "0", updated_at: a.now })
    .onConflict((oc) => oc.columns(["account", "currency"]).doNothing()),
);

const balanceQuery = preparedQuery(["account", "currency"] as const, (db, a) =>
  db
    .selectFrom("ledger_balances")
    .select("balance")
    .where("account", "=", a.account)
    .where("currency", "=", a.currency),
);

const lockedBalanceQuery = preparedQuery(["account", "currency"] as const, (db, a) =>
  db
    .selectFrom("ledger_balances")
    .select("balance")
    .where("account", "=", a.account)
    .where("currency", "=", a.currency)
    .forUpdate(),
);

const insertMovementStatement = preparedStatement(["id", "cause", "causeId", "kind", "memo", "now"] as const, (db, a) =>
  db
    .insertInto("ledger_movements")
    .values({ id: a.id, cause: a.cause, cause_id: a.causeId, kind: a.kind, memo: a.memo, created_at: a.now })
    .onConflict((oc) => oc.columns(["cause", "cause_id", "kind"]).doNothing()),
);

const updateBalanceStatement = preparedStatement(["account", "currency", "balance", "now"] as const, (db, a) =>
  db
    .updateTable("ledger_balances")
    .set({ balance: a.balance, updated_at: a.now })
    .where("account", "=", a.account)
    .where("currency", "=", a.currency),
);

type EntryArgs = Record<string, unknown>;
/** One multi-row INSERT per number of postings (its SQL differs by row count); movements have few shapes. */
const insertEntriesByCount = new Map<number, (tx: Tx, args: EntryArgs) => Promise<unknown>>();

function insertEntriesStatement(count: number): (tx: Tx, args: EntryArgs) => Promise<unknown> {
  let statement = insertEntriesByCount.get(count);
  if (!statement) {
    const names = ["movementId"];
    for (let i = 0; i < count; i++) names.push(`account${i}`, `currency${i}`, `amount${i}`);
    statement = preparedStatement(names, (db, a) =>
      db.insertInto("ledger_entries").values(
        Array.from({ length: count }, (_, i) => ({
          movement_id: a.movementId as string,
          account: a[`account${i}`] as string,
          currency: a[`currency${i}`] as string,
          amount: a[`amount${i}`] as string,
        })),
      ),
    );
    insertEntriesByCount.set(count, statement);
  }
  return statement;
}

/**
 * What a movement changes on each merchant balance, in the order balances are locked (account,
 * then currency): other accounts have no balance row to check.
 */
export function merchantDeltas(movement: Movement): { account: string; currency: string; delta: bigint }[] {
  const deltas = new Map<string, { account: string; currency: string; delta: bigint }>();
  for (const posting of movement.postings) {
    if (!isMerchantAccount(posting.account)) continue;
    const key = `${posting.account}\u0000${posting.currency}`;
    const current = deltas.get(key) ?? { account: posting.account, currency: posting.currency, delta: 0n };
    deltas.set(key, { ...current, delta: current.delta + posting.amount });
  }
  return [...deltas.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

export type PostOutcome = Result<{ movementId: string }, "insufficient_balance" | "already_posted">;

/**
 * Posts a movement inside the caller's transaction. Merchant balance rows are locked in a fixed
 * order (PostgreSQL `FOR UPDATE`; SQLite transactions are serialized by its write lock) and
 * checked before anything is written, so a refused movement leaves no trace. A movement whose
 * (cause, cause id, kind) was already posted is not posted again.
 */
export async function postMovement(tx: Tx, movement: Movement, now: string): Promise<PostOutcome> {
  const ordered = merchantDeltas(movement);

  const updates: { account: string; currency: string; balance: bigint }[] = [];
  for (const { account, currency, delta } of ordered) {
    // A debit needs an existing balance to cover it: only a credit may have to create the row.
    if (delta > 0n) await ensureBalanceRow(tx, { account, currency, now });
    const [locked] = await (tx.dialect === "postgres" ? lockedBalanceQuery : balanceQuery)(tx, { account, currency });
    if (!locked) {
      assert(delta <= 0n, `balance row ${account} ${currency} exists`);
      if (delta === 0n) continue;
      return err("insufficient_balance", `there is no ${currency} balance to cover ${-delta} minor units`);
    }
    const next = nextBalance(account, BigInt(locked.balance), delta);
    if (!next.ok) return err("insufficient_balance", `${currency} balance does not cover ${-delta} minor units`);
    updates.push({ account, currency, balance: next.value });
  }

  const movementId = newRowId();
  const inserted = await insertMovementStatement(tx, {
    id: movementId,
    cause: movement.cause,
    causeId: movement.causeId,
    kind: movement.kind,
    memo: movement.memo,
    now,
  });
  if (inserted.affected === 0n) return err("already_posted");

  const entryArgs: EntryArgs = { movementId };
  movement.postings.forEach((p, i) => {
    entryArgs[`account${i}`] = p.account;
    entryArgs[`currency${i}`] = p.currency;
    entryArgs[`amount${i}`] = p.amount.toString();
  });
  await insertEntriesStatement(movement.postings.length)(tx, entryArgs);
  for (const u of updates) {
    await updateBalanceStatement(tx, { account: u.account, currency: u.currency, balance: u.balance.toString(), now });
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
