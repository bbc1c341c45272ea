// Card payments repository (product §20): checkouts per invoice, provider events applied once, disputes and their holds.
import { merchantAccount } from "../domain/ledger.ts";
import { assert } from "../domain/result.ts";
import type { CardCheckoutsTable, CardDisputesTable } from "./schema.ts";
import type { Store, Tx } from "./store.ts";

export type CardCheckout = CardCheckoutsTable;
export type CardDisputeRow = CardDisputesTable;

/**
 * The invoice's checkout, written before the provider is asked: the first caller's amount and
 * expiry stand, so every later call asks the provider the same thing under the same key.
 */
export async function ensureCheckout(
  tx: Tx,
  fields: { invoiceId: string; provider: string; amountMinor: bigint; expiresAt: string },
  now: string,
): Promise<CardCheckout> {
  await tx.db
    .insertInto("card_checkouts")
    .values({
      invoice_id: fields.invoiceId,
      provider: fields.provider,
      amount: fields.amountMinor.toString(),
      expires_at: fields.expiresAt,
      session_id: null,
      url: null,
      payment_id: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column("invoice_id").doNothing())
    .execute();
  const row = await findCheckoutByInvoice(tx, fields.invoiceId);
  assert(row, `checkout of invoice ${fields.invoiceId} was just written`);
  return row;
}

/** Records the session the provider answered; the provider answers one session per key, so a second write is the same. */
export async function saveCheckoutSession(
  store: Store,
  invoiceId: string,
  session: { sessionId: string; url: string },
  now: string,
): Promise<void> {
  await store.transaction((tx) =>
    tx.db
      .updateTable("card_checkouts")
      .set({ session_id: session.sessionId, url: session.url, updated_at: now })
      .where("invoice_id", "=", invoiceId)
      .where("session_id", "is", null)
      .execute(),
  );
}

export async function findCheckoutByInvoice(tx: Tx, invoiceId: string): Promise<CardCheckout | null> {
  return (
    (await tx.db.selectFrom("card_checkouts").selectAll().where("invoice_id", "=", invoiceId).executeTakeFirst()) ??
    null
  );
}

export async function findCheckoutBySession(tx: Tx, sessionId: string): Promise<CardCheckout | null> {
  return (
    (await tx.db.selectFrom("card_checkouts").selectAll().where("session_id", "=", sessionId).executeTakeFirst()) ??
    null
  );
}

export async function findCheckoutByPayment(tx: Tx, paymentId: string): Promise<CardCheckout | null> {
  return (
    (await tx.db.selectFrom("card_checkouts").selectAll().where("payment_id", "=", paymentId).executeTakeFirst()) ??
    null
  );
}

/** The provider's payment of the invoice, so that its disputes and refunds find the invoice. */
export async function setCheckoutPayment(tx: Tx, invoiceId: string, paymentId: string, now: string): Promise<void> {
  await tx.db
    .updateTable("card_checkouts")
    .set({ payment_id: paymentId, updated_at: now })
    .where("invoice_id", "=", invoiceId)
    .where("payment_id", "is", null)
    .execute();
}

/**
 * Marks a provider event applied, in the transaction that applies it: false when it already was
 * (a redelivery, or another process that got there first; PostgreSQL makes the second wait).
 */
export async function claimEvent(
  tx: Tx,
  event: { eventId: string; provider: string; kind: string; outcome: string },
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .insertInto("card_provider_events")
    .values({
      event_id: event.eventId,
      provider: event.provider,
      kind: event.kind,
      outcome: event.outcome,
      received_at: now,
    })
    .onConflict((oc) => oc.column("event_id").doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** The merchant's available balance in a currency, locked (PostgreSQL) for the movement that follows. */
export async function lockedAvailable(tx: Tx, merchantId: string, currency: string): Promise<bigint> {
  const row = await tx.db
    .selectFrom("ledger_balances")
    .select("balance")
    .where("account", "=", merchantAccount(merchantId))
    .where("currency", "=", currency)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  return row ? BigInt(row.balance) : 0n;
}

export async function findDispute(tx: Tx, disputeId: string): Promise<CardDisputeRow | null> {
  return (
    (await tx.db
      .selectFrom("card_disputes")
      .selectAll()
      .where("dispute_id", "=", disputeId)
      .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
      .executeTakeFirst()) ?? null
  );
}

export async function insertDispute(tx: Tx, row: CardDisputeRow): Promise<void> {
  await tx.db.insertInto("card_disputes").values(row).execute();
}

export async function updateDispute(
  tx: Tx,
  disputeId: string,
  fields: { status: string; reason: string; outcome: string | null },
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("card_disputes")
    .set({ ...fields, updated_at: now })
    .where("dispute_id", "=", disputeId)
    .execute();
}

/** An invoice's disputes, oldest first (a payment has few). */
export async function disputesOfInvoice(tx: Tx, invoiceId: string): Promise<CardDisputeRow[]> {
  return tx.db
    .selectFrom("card_disputes")
    .selectAll()
    .where("invoice_id", "=", invoiceId)
    .orderBy("created_at")
    .orderBy("dispute_id")
    .limit(100)
    .execute();
}

/** Disputes newest first, of one merchant or all, bounded by `limit`. */
export async function listDisputes(
  tx: Tx,
  filter: { merchantId?: string; openOnly?: boolean; limit: number },
): Promise<CardDisputeRow[]> {
  return tx.db
    .selectFrom("card_disputes")
    .selectAll()
    .$if(filter.merchantId !== undefined, (qb) => qb.where("merchant_id", "=", filter.merchantId as string))
    .$if(filter.openOnly === true, (qb) => qb.where("outcome", "is", null))
    .orderBy("created_at", "desc")
    .orderBy("dispute_id", "desc")
    .limit(filter.limit)
    .execute();
}
