// The operator's velocity caps per network (product §31) and the payouts they counted: read, set, and summed over the rolling window.
import type { Tx } from "./store.ts";

/** The network's cap in USD cents per rolling 24 hours; null: no cap. */
export async function findVelocityCap(tx: Tx, network: string): Promise<bigint | null> {
  const row = await tx.db
    .selectFrom("network_velocity_caps")
    .select("usd_cents")
    .where("network", "=", network)
    .executeTakeFirst();
  return row === undefined ? null : BigInt(row.usd_cents);
}

/** Sets (or with null, removes) a network's cap. */
export async function putVelocityCap(tx: Tx, network: string, cents: bigint | null, now: string): Promise<void> {
  if (cents === null) {
    await tx.db.deleteFrom("network_velocity_caps").where("network", "=", network).execute();
    return;
  }
  await tx.db
    .insertInto("network_velocity_caps")
    .values({ network, usd_cents: cents.toString(), updated_at: now })
    .onConflict((oc) => oc.column("network").doUpdateSet({ usd_cents: cents.toString(), updated_at: now }))
    .execute();
}

/** The USD cents of the network's payouts signed at or after `since`. */
export async function spentSince(tx: Tx, network: string, since: string): Promise<bigint> {
  const row = await tx.db
    .selectFrom("velocity_spends")
    .select((eb) => eb.fn.sum<number | string | null>("usd_cents").as("cents"))
    .where("network", "=", network)
    .where("spent_at", ">=", since)
    .executeTakeFirst();
  return row?.cents === null || row?.cents === undefined ? 0n : BigInt(row.cents);
}

/** Counts a payout against its network's cap, once (its replacements are the same payout). */
export async function recordVelocitySpend(
  tx: Tx,
  spend: { requestKey: string; network: string; cents: bigint; at: string },
): Promise<void> {
  await tx.db
    .insertInto("velocity_spends")
    .values({
      request_id: spend.requestKey,
      network: spend.network,
      usd_cents: spend.cents.toString(),
      spent_at: spend.at,
    })
    .onConflict((oc) => oc.column("request_id").doNothing())
    .execute();
}

/** Queued payouts of a network the cap holds back. */
export async function awaitingCapCount(tx: Tx, network: string, status: string): Promise<number> {
  const row = await tx.db
    .selectFrom("payouts")
    .innerJoin("currencies", "currencies.ticker", "payouts.currency")
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .where("payouts.state", "=", "queued")
    .where("payouts.processor_status", "=", status)
    .where("currencies.network", "=", network)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
