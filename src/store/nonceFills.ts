// No hot-wallet nonce is abandoned (product §19): which nonces stored transactions will use, and the gap watch the operator sees.
import type { Tx } from "./store.ts";

/** States of a hot-wallet transaction that hold its nonce: every state but replaced (one that lost it). */
const NONCE_HOLDING = ["signed", "broadcast", "dropped", "mined", "confirmed", "reverted"] as const;

/**
 * Nonces in [from, to) of the hot wallet `address` that a stored transaction the service still
 * sends or has seen mined will use: the outbox's (payouts, flushes, sweeps' gas fundings, fills,
 * factory deployments; but replaced ones). A transaction mined while this reads still counts.
 */
export async function usedNonces(
  tx: Tx,
  network: string,
  address: string,
  from: number,
  to: number,
): Promise<{ nonces: Set<number> }> {
  const outbox = await tx.db
    .selectFrom("hot_transactions")
    .select("nonce")
    .where("network", "=", network)
    .where("from_address", "=", address.toLowerCase())
    .where("state", "in", [...NONCE_HOLDING])
    .where("nonce", ">=", from)
    .where("nonce", "<", to)
    .execute();
  return { nonces: new Set(outbox.map((r) => Number(r.nonce))) };
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
  const [outbox, gap] = await Promise.all([
    tx.db
      .selectFrom("hot_transactions")
      .select(["nonce", "created_at"])
      .where("network", "=", network)
      .where("state", "in", ["signed", "broadcast", "dropped"])
      .execute(),
    tx.db
      .selectFrom("networks")
      .select(["nonce_gaps", "nonce_gap_since"])
      .where("name", "=", network)
      .executeTakeFirst(),
  ]);
  const nonces = new Set(outbox.map((r) => `n${r.nonce}`));
  const times = outbox.map((r) => r.created_at);
  times.sort();
  return {
    unminedNonces: nonces.size,
    oldestUnminedSince: times[0] ?? null,
    nonceGaps: Number(gap?.nonce_gaps ?? 0),
    nonceGapSince: gap?.nonce_gap_since ?? null,
  };
}
