// Pre-authorized renewals (product §29): one row per (subscription, period) and per signed authorization, moved only along its state table.

import { mayMoveRenewal, type RenewalState } from "../domain/renewalAuthorizations.ts";
import { assert } from "../domain/result.ts";
import type { RenewalAuthorizationsTable } from "./schema.ts";
import type { Tx } from "./store.ts";

export interface RenewalAuthorization {
  id: string;
  subscriptionId: string;
  period: number;
  network: string;
  /** The catalog entry's internalTicker. */
  currency: string;
  token: string;
  from: string;
  nonce: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  signature: string;
  state: RenewalState;
  walletAuthorizationId: string | null;
  createdAt: string;
}

function fromRow(r: RenewalAuthorizationsTable): RenewalAuthorization {
  return {
    id: r.id,
    subscriptionId: r.subscription_id,
    period: Number(r.period),
    network: r.network,
    currency: r.currency,
    token: r.token,
    from: r.from_address,
    nonce: r.nonce,
    value: BigInt(r.value),
    validAfter: BigInt(r.valid_after),
    validBefore: BigInt(r.valid_before),
    signature: r.signature,
    state: r.state as RenewalState,
    walletAuthorizationId: r.wallet_authorization_id,
    createdAt: r.created_at,
  };
}

export type NewRenewal = Omit<RenewalAuthorization, "state" | "walletAuthorizationId" | "createdAt">;

/**
 * Stores each renewal as `signed` unless its period, or its authorization, is already stored
 * (posted again, or twice at once): the rows as they now are, one per period asked.
 */
export async function storeRenewals(tx: Tx, renewals: readonly NewRenewal[], now: string) {
  for (const a of renewals) {
    await tx.db
      .insertInto("renewal_authorizations")
      .values({
        id: a.id,
        subscription_id: a.subscriptionId,
        period: a.period,
        network: a.network,
        currency: a.currency,
        token: a.token,
        from_address: a.from,
        nonce: a.nonce,
        value: a.value.toString(),
        valid_after: a.validAfter.toString(),
        valid_before: a.validBefore.toString(),
        signature: a.signature,
        state: "signed",
        wallet_authorization_id: null,
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
  const subscriptionId = renewals[0]?.subscriptionId ?? "";
  const periods = renewals.map((a) => a.period);
  return (await renewalsOf(tx, subscriptionId)).filter((a) => periods.includes(a.period));
}

/** A subscription's renewals, by period (at most the periods pre-authorized: a dozen ahead at a time). */
export async function renewalsOf(tx: Tx, subscriptionId: string): Promise<RenewalAuthorization[]> {
  const rows = await tx.db
    .selectFrom("renewal_authorizations")
    .selectAll()
    .where("subscription_id", "=", subscriptionId)
    .orderBy("period")
    .execute();
  return rows.map(fromRow);
}

export async function findRenewal(tx: Tx, subscriptionId: string, period: number) {
  const row = await tx.db
    .selectFrom("renewal_authorizations")
    .selectAll()
    .where("subscription_id", "=", subscriptionId)
    .where("period", "=", period)
    .executeTakeFirst();
  return row ? fromRow(row) : null;
}

/** Moves a renewal from the state its caller saw (compare-and-set), asserted against the table. */
export async function moveRenewal(
  tx: Tx,
  a: Pick<RenewalAuthorization, "id" | "state">,
  to: RenewalState,
  now: string,
  walletAuthorizationId: string | null = null,
): Promise<boolean> {
  assert(mayMoveRenewal(a.state, to), `renewal authorization ${a.state} -> ${to} is in the table`);
  const result = await tx.db
    .updateTable("renewal_authorizations")
    .set({
      state: to,
      updated_at: now,
      ...(walletAuthorizationId === null ? {} : { wallet_authorization_id: walletAuthorizationId }),
    })
    .where("id", "=", a.id)
    .where("state", "=", a.state)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** The chain id of each configured network (a few rows). */
export async function networkChainIds(tx: Tx): Promise<Map<string, number>> {
  const rows = await tx.db.selectFrom("networks").select(["name", "chain_id"]).execute();
  return new Map(rows.map((r) => [r.name, Number(r.chain_id)]));
}
