// No hot-wallet nonce is abandoned (product §19): which nonces stored transactions will use, and the gap watch the operator sees.
import type { Tx } from "./store.ts";

/** States of a hot-wallet transaction that hold its nonce: every state but replaced (one that lost it). */
const NONCE_HOLDING = ["signed", "broadcast", "dropped", "mined", "confirmed", "reverted"] as const;

/**
 * Nonces in [from, to) of the hot wallet `address` that a stored transaction the service still
 * sends or has seen mined will use: the outbox's (payouts, flushes, fills, factory deployments; but
 * replaced ones) and gas fundings of sweeps not given up. A transaction mined while this reads still counts.
 * Fundings signed before migration 022 have no stored nonce: their bytes are answered for the
 * caller to read (`unknownFundings`).
 */
export async function usedNonces(
  tx: Tx,
  network: string,
  address: string,
  from: number,
  to: number,
): Promise<{ nonces: Set<number>; unknownFundings: string[] }> {
  const [outbox, fundings] = await Promise.all([
    tx.db
      .selectFrom("hot_transactions")
      .select("nonce")
      .where("network", "=", network)
      .where("from_address", "=", address.toLowerCase())
      .where("state", "in", [...NONCE_HOLDING])
      .where("nonce", ">=", from)
      .where("nonce", "<", to)
      .execute(),
    tx.db
      .selectFrom("sweeps")
      .select(["funding_nonce", "funding_signed"])
      .where("network", "=", network)
      .where("state", "in", ["funding", "sweeping", "completed"])
      .where("funding_signed", "is not", null)
      .execute(),
  ]);
  const nonces = new Set<number>();
  for (const r of outbox) nonces.add(Number(r.nonce));
  const unknownFundings: string[] = [];
  for (const f of fundings) {
    if (f.funding_nonce !== null && f.funding_nonce !== undefined) nonces.add(Number(f.funding_nonce));
    else if (f.funding_signed) unknownFundings.push(f.funding_signed);
  }
  return { nonces, unknownFundings };
}

/** Records what the last gap check found: `gaps` nonces nothing will use (0: none), since when. */
export async function recordNonceGaps(tx: Tx, network: string, gaps: number, now: string): Promise<string | null> {
  const row = await tx.db
    .selectFrom("networks")
    .select("nonce_gap_since")
    .where("name", "=", network)
    .executeTakeFirst();
  const since = gaps === 0 ? null : (row?.nonce_gap_since ?? now);
  await tx.db
    .updateTable("networks")
    .set({ nonce_gaps: gaps, nonce_gap_since: since })
    .where("name", "=", network)
    .execute();
  return since;
}

/** What the operator sees of a network's hot-wallet nonces: those signed and not yet mined, and gaps. */
export interface NonceOverview {
  /** Nonces with a stored transaction not yet mined (payouts, gas fundings, flushes, fills). */
  unminedNonces: number;
  /** When the oldest of them was signed (null: none). */
  oldestUnminedSince: string | null;
  /** Nonces below the next one that no stored transaction will use, as the last check found. */
  nonceGaps: number;
  nonceGapSince: string | null;
}

export async function nonceOverview(tx: Tx, network: string): Promise<NonceOverview> {
  const [outbox, fundings, gap] = await Promise.all([
    tx.db
      .selectFrom("hot_transactions")
      .select(["nonce", "created_at"])
      .where("network", "=", network)
      .where("state", "in", ["signed", "broadcast", "dropped"])
      .execute(),
    tx.db
      .selectFrom("sweeps")
      .select(["id", "updated_at", "funding_signed_at"])
      .where("network", "=", network)
      .where("state", "=", "funding")
      .execute(),
    tx.db
      .selectFrom("networks")
      .select(["nonce_gaps", "nonce_gap_since"])
      .where("name", "=", network)
      .executeTakeFirst(),
  ]);
  const nonces = new Set(outbox.map((r) => `n${r.nonce}`));
  for (const f of fundings) nonces.add(`f${f.id}`);
  const times = outbox.map((r) => r.created_at);
  // A funding's age is its nonce's first signing (a funding signed before migration 027: its sweep's last update).
  times.push(...fundings.map((f) => f.funding_signed_at ?? f.updated_at));
  times.sort();
  return {
    unminedNonces: nonces.size,
    oldestUnminedSince: times[0] ?? null,
    nonceGaps: Number(gap?.nonce_gaps ?? 0),
    nonceGapSince: gap?.nonce_gap_since ?? null,
  };
}
