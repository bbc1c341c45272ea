// The sweeps' gas fundings move into the hot wallet's one outbox (product §26): each sweep's signed fundings become `hot_transactions` rows of purpose `funding` (purpose_id the sweep's id), and the sweeps table loses its funding columns, in one migration transaction.
import type { Kysely } from "kysely";
import type { Hex } from "viem";
import { newRowId } from "../../domain/ids.ts";
import { copyIntoOutbox, type OutboxRow } from "./040_hot_transactions.ts";
import { loadViem, viem } from "./viem.ts";

/** The columns the sweeps table gives up: the outbox holds its fundings now (their amount is the row's value). */
const FUNDING_COLUMNS = [
  "funding_tx",
  "funding_signed",
  "funding_amount",
  "funding_nonce",
  "funding_signed_at",
  "funding_resigned_at",
  "funding_replaced",
] as const;

interface LegacySweep {
  id: string;
  network: string;
  state: string;
  funding_signed: string | null;
  funding_nonce: number | null;
  funding_signed_at: string | null;
  funding_resigned_at: string | null;
  funding_replaced: string | null;
  updated_at: string;
}

/**
 * Its fundings, oldest first, once each: the replaced ones, then the current one unless it is
 * among them (a sweep whose earlier funding was the one mined kept that one as current and in
 * the replaced list).
 */
function fundingsOf(s: LegacySweep): string[] {
  const replaced = s.funding_replaced ? (JSON.parse(s.funding_replaced) as string[]) : [];
  const all = [...replaced, s.funding_signed as string];
  return all.filter((raw, i) => all.indexOf(raw) === i);
}

/**
 * The outbox state of one funding of a sweep. In state `funding` every one is `signed`: any of
 * them may be the one mined, and the outbox follows, replaces and settles them as its own. Past
 * funding (`sweeping`, `completed`), and also `pending` or `failed` with a funding: those states
 * are reached with a funding only through a sweep that signed its own transfer, which it does
 * only once its funding is deep (sweeper.ts `step`); a sweep whose transfer reverted goes back
 * to `pending` (or `failed` past its bound) keeping its funding columns, while a funding whose
 * nonce was lost clears them. So its current funding is `confirmed` and the others `replaced`.
 */
function stateOf(s: LegacySweep, raw: string): string {
  if (s.state === "funding") return "signed";
  return raw === s.funding_signed ? "confirmed" : "replaced";
}

/** When each one counts as signed: the first at its nonce's first signing, the current at its own, the ones between a millisecond apart in order. */
function signedAt(s: LegacySweep, i: number, count: number): string {
  const first = s.funding_signed_at ?? s.updated_at;
  if (i === count - 1 && count > 1) return s.funding_resigned_at ?? new Date(Date.parse(first) + i).toISOString();
  return new Date(Date.parse(first) + i).toISOString();
}

async function rowsOf(s: LegacySweep, networks: ReadonlyMap<string, number>): Promise<OutboxRow[]> {
  const raws = fundingsOf(s);
  if (raws.length === 0) return [];
  await loadViem();
  const { keccak256, parseTransaction, recoverTransactionAddress } = viem();
  const rows: OutboxRow[] = [];
  let previous: string | null = null;
  for (const [i, raw] of raws.entries()) {
    const t = parseTransaction(raw as Hex);
    const hash = keccak256(raw as Hex);
    const from = await recoverTransactionAddress({ serializedTransaction: raw as never });
    const at = signedAt(s, i, raws.length);
    const id = newRowId();
    rows.push({
      id,
      purpose: "funding",
      purpose_id: s.id,
      network: s.network,
      chain_id: networks.get(s.network) ?? t.chainId ?? 0,
      from_address: from.toLowerCase(),
      nonce: s.funding_nonce ?? t.nonce ?? 0,
      hash,
      raw,
      token_contract: null,
      token_amount: "0",
      replaces_id: previous,
      state: stateOf(s, raw),
      created_at: at,
      updated_at: at,
    });
    previous = id;
  }
  return rows;
}

async function move(db: Kysely<any>): Promise<void> {
  const columns = (await db.introspection.getTables()).find((t) => t.name === "sweeps")?.columns ?? [];
  // Done already, and killed before the migration was recorded (SQLite records it outside this transaction).
  if (!columns.some((c) => c.name === "funding_signed")) return;
  const networks = new Map(
    (await db.selectFrom("networks").select(["name", "chain_id"]).execute()).map((n) => [n.name, Number(n.chain_id)]),
  );
  const sweeps = (await db
    .selectFrom("sweeps")
    .select([
      "id",
      "network",
      "state",
      "updated_at",
      ...FUNDING_COLUMNS.filter((c) => c !== "funding_tx" && c !== "funding_amount"),
    ])
    .where("funding_signed", "is not", null)
    .orderBy("created_at")
    .orderBy("id")
    .execute()) as LegacySweep[];
  const rows: OutboxRow[] = [];
  for (const s of sweeps) rows.push(...(await rowsOf(s, networks)));
  await copyIntoOutbox(db, rows);
  for (const column of FUNDING_COLUMNS) await db.schema.alterTable("sweeps").dropColumn(column).execute();
}

export const fundingTransactions = {
  async up(db: Kysely<any>): Promise<void> {
    // PostgreSQL runs each migration in a transaction; Kysely does not on SQLite, whose DDL is
    // transactional all the same: one transaction, so a process killed midway leaves the sweeps whole.
    if (db.isTransaction) await move(db);
    else await db.transaction().execute((trx) => move(trx));
  },
};
