// Payers' signed authorizations (product §28): one row per authorization however often it is posted, moved only along its state table.
import { assert } from "../domain/result.ts";
import {
  mayMoveAuthorization,
  type SignedAuthorizationKind,
  type WalletAuthorizationState,
} from "../domain/walletAuthorization.ts";
import type { WalletAuthorizationsTable } from "./schema.ts";
import type { Tx } from "./store.ts";

export interface WalletAuthorization {
  id: string;
  invoiceId: string;
  network: string;
  currency: string;
  kind: SignedAuthorizationKind;
  token: string;
  from: string;
  nonce: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  signature: string;
  state: WalletAuthorizationState;
  failure: string | null;
  createdAt: string;
}

function fromRow(r: WalletAuthorizationsTable): WalletAuthorization {
  return {
    id: r.id,
    invoiceId: r.invoice_id,
    network: r.network,
    currency: r.currency,
    kind: r.kind as SignedAuthorizationKind,
    token: r.token,
    from: r.from_address,
    nonce: r.nonce,
    value: BigInt(r.value),
    validAfter: BigInt(r.valid_after),
    validBefore: BigInt(r.valid_before),
    signature: r.signature,
    state: r.state as WalletAuthorizationState,
    failure: r.failure,
    createdAt: r.created_at,
  };
}

/** The token's replay key: the same authorization is the same row, whichever invoice it was posted to. */
export interface AuthorizationKey {
  network: string;
  token: string;
  from: string;
  nonce: string;
}

export async function findAuthorizationByKey(tx: Tx, key: AuthorizationKey): Promise<WalletAuthorization | null> {
  const row = await tx.db
    .selectFrom("wallet_authorizations")
    .selectAll()
    .where("network", "=", key.network)
    .where("token", "=", key.token)
    .where("from_address", "=", key.from)
    .where("nonce", "=", key.nonce)
    .executeTakeFirst();
  return row ? fromRow(row) : null;
}

export async function findAuthorization(tx: Tx, id: string): Promise<WalletAuthorization | null> {
  const row = await tx.db.selectFrom("wallet_authorizations").selectAll().where("id", "=", id).executeTakeFirst();
  return row ? fromRow(row) : null;
}

/**
 * Stores a new authorization as `accepted`, or answers the row that already holds its key: posted
 * twice or twenty times at once, one row, so one submission.
 */
export async function acceptAuthorization(
  tx: Tx,
  a: Omit<WalletAuthorization, "state" | "failure" | "createdAt">,
  now: string,
): Promise<WalletAuthorization> {
  await tx.db
    .insertInto("wallet_authorizations")
    .values({
      id: a.id,
      invoice_id: a.invoiceId,
      network: a.network,
      currency: a.currency,
      kind: a.kind,
      token: a.token,
      from_address: a.from,
      nonce: a.nonce,
      value: a.value.toString(),
      valid_after: a.validAfter.toString(),
      valid_before: a.validBefore.toString(),
      signature: a.signature,
      state: "accepted",
      failure: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.columns(["network", "token", "from_address", "nonce"]).doNothing())
    .execute();
  const stored = await findAuthorizationByKey(tx, a);
  assert(stored !== null, `authorization ${a.id} is stored or its key already was`);
  return stored;
}

/** A network's authorizations waiting for the hot wallet, oldest first, at most `limit`. */
export async function acceptedAuthorizations(tx: Tx, network: string, limit: number): Promise<WalletAuthorization[]> {
  return authorizationsInState(tx, network, "accepted", limit);
}

/** A network's authorizations in one state, oldest first, at most `limit`. */
export async function authorizationsInState(
  tx: Tx,
  network: string,
  state: WalletAuthorizationState,
  limit: number,
): Promise<WalletAuthorization[]> {
  const rows = await tx.db
    .selectFrom("wallet_authorizations")
    .selectAll()
    .where("state", "=", state)
    .where("network", "=", network)
    .orderBy("created_at")
    .orderBy("id")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

/** The latest authorizations posted to an invoice (the payer's page shows where its signature is). */
export async function authorizationsOfInvoice(
  tx: Tx,
  invoiceId: string,
  limit: number,
): Promise<WalletAuthorization[]> {
  const rows = await tx.db
    .selectFrom("wallet_authorizations")
    .selectAll()
    .where("invoice_id", "=", invoiceId)
    .orderBy("created_at", "desc")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

/** Moves an authorization from the state its caller saw (compare-and-set), asserted against the table. */
export async function moveAuthorization(
  tx: Tx,
  a: Pick<WalletAuthorization, "id" | "state">,
  to: WalletAuthorizationState,
  now: string,
  failure: string | null = null,
): Promise<boolean> {
  assert(mayMoveAuthorization(a.state, to), `wallet authorization ${a.state} -> ${to} is in the table`);
  const result = await tx.db
    .updateTable("wallet_authorizations")
    .set({ state: to, updated_at: now, failure: failure?.slice(0, 500) ?? null })
    .where("id", "=", a.id)
    .where("state", "=", a.state)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** The transaction of an invoice's first recorded payment (its key is `<hash>:<logIndex>`), or null: what a front-run x402 settle answers. */
export async function firstPaymentTransaction(tx: Tx, invoiceId: string): Promise<string | null> {
  const row = await tx.db
    .selectFrom("invoice_payments")
    .select("tx_id")
    .where("invoice_id", "=", invoiceId)
    .orderBy("created_at")
    .executeTakeFirst();
  return row?.tx_id.split(":")[0] ?? null;
}
