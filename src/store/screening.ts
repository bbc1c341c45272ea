// Screening's rows (product §21): payments waiting for their sender's screening, their retries, and the operator's decisions.
import { newRowId } from "../domain/ids.ts";
import type { Store, Tx } from "./store.ts";

export interface WaitingPayment {
  paymentId: string;
  invoiceId: string;
  fromAddress: string | null;
  attempts: number;
}

/** Up to `limit` unscreened payments due for an attempt (never tried, or their backoff passed), oldest first. */
export async function paymentsDueForScreening(
  store: Store | Tx,
  now: string,
  limit: number,
): Promise<WaitingPayment[]> {
  const rows = await store.db
    .selectFrom("invoice_payments")
    .select(["id", "invoice_id", "from_address", "screening_attempts"])
    .where("aml_status", "=", "unscreened")
    .where((eb) => eb.or([eb("screen_after", "is", null), eb("screen_after", "<=", now)]))
    .orderBy("created_at")
    .orderBy("id")
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    paymentId: r.id,
    invoiceId: r.invoice_id,
    fromAddress: r.from_address,
    attempts: Number(r.screening_attempts ?? 0),
  }));
}

/**
 * An attempt that found no answer: counted, and the next one not before `after`. Only from the
 * count the attempt read, so two processes that tried the same payment at once count it once.
 */
export async function deferScreening(
  tx: Tx,
  payment: Pick<WaitingPayment, "paymentId" | "attempts">,
  after: string,
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("invoice_payments")
    .set({ screening_attempts: payment.attempts + 1, screen_after: after, updated_at: now })
    .where("id", "=", payment.paymentId)
    .where("aml_status", "=", "unscreened")
    .where("screening_attempts", "=", payment.attempts)
    .execute();
}

/** Payments waiting for screening, and the oldest one's arrival (null when none wait). */
export async function screeningBacklog(store: Store): Promise<{ waiting: number; oldest: string | null }> {
  const row = await store.db
    .selectFrom("invoice_payments")
    .select((eb) => [eb.fn.countAll<number | string | bigint>().as("n"), eb.fn.min("created_at").as("oldest")])
    .where("aml_status", "=", "unscreened")
    .executeTakeFirst();
  return { waiting: Number(row?.n ?? 0), oldest: (row?.oldest as string | null | undefined) ?? null };
}

/** The audit row of an operator's decision on an invoice in aml_check, or on one flagged late payment (`paymentId`). */
export async function recordAmlDecision(
  tx: Tx,
  decision: { invoiceId: string; decision: string; actor: string; statusAfter: string; paymentId?: string },
  now: string,
): Promise<void> {
  await tx.db
    .insertInto("aml_decisions")
    .values({
      id: newRowId(),
      invoice_id: decision.invoiceId,
      decision: decision.decision,
      actor: decision.actor,
      status_after: decision.statusAfter,
      payment_id: decision.paymentId ?? null,
      created_at: now,
    })
    .execute();
}
