// Callback outbox repository: deliveries of events (queued in the transaction that records the event), claimed under a lease, attempts recorded.
import { type Selectable, sql } from "kysely";
import { assert, err, ok, type Result } from "../domain/result.ts";
import type { CallbackAttemptsTable, CallbackEventsTable } from "./schema.ts";
import type { Tx } from "./store.ts";

export type CallbackStatus = "pending" | "delivered" | "failed";

export interface CallbackEvent {
  id: string;
  seq: number;
  /** The invoice of an invoice event; null for a withdrawal or refund event. */
  invoiceId: string | null;
  /** The invoice or the request the event is about: its events are delivered in order. */
  subjectId: string;
  merchantId: string;
  type: string;
  url: string;
  destination: string;
  body: string;
  status: CallbackStatus;
  attemptCount: number;
  schedulePosition: number;
  nextAttemptAt: string | null;
  leaseUntil: string | null;
  deliveredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface CallbackAttempt {
  number: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
}

function eventFromRow(r: Selectable<CallbackEventsTable>): CallbackEvent {
  return {
    id: r.id,
    seq: Number(r.seq),
    invoiceId: r.invoice_id,
    subjectId: r.subject_id,
    merchantId: r.merchant_id,
    type: r.type,
    url: r.url,
    destination: r.destination,
    body: r.body,
    status: r.status as CallbackStatus,
    attemptCount: Number(r.attempt_count),
    schedulePosition: Number(r.schedule_position),
    nextAttemptAt: r.next_attempt_at,
    leaseUntil: r.lease_until,
    deliveredAt: r.delivered_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function attemptFromRow(r: Omit<CallbackAttemptsTable, "id" | "event_id">): CallbackAttempt {
  return {
    number: Number(r.number),
    startedAt: r.started_at,
    durationMs: Number(r.duration_ms),
    statusCode: r.status_code === null ? null : Number(r.status_code),
    error: r.error,
    responseBody: r.response_body,
  };
}

/** `host[:port]` of a URL, lowercased; an unreadable URL gets its own empty destination and fails at delivery. */
export function destinationOf(url: string): string {
  try {
    return new URL(url).host.toLowerCase();
  } catch {
    return "";
  }
}

/** What a callback delivers: an event as recorded (src/store/events.ts). */
export interface EventToDeliver {
  id: string;
  merchantId: string;
  type: string;
  subjectId: string;
  /** The invoice of an invoice event; null for a withdrawal or refund event. */
  invoiceId: string | null;
  /** The event's exact JSON text: every attempt sends (and signs) these bytes. */
  body: string;
}

/**
 * Queues the delivery of an event to a URL, in the transaction that records the event (recordEvent
 * in src/store/events.ts, and the dashboard's test event): the callback exists exactly when the change
 * commits. Deliveries of one subject get their sequence numbers (the delivery order) in the order
 * the changes commit, since each change holds its subject's row lock.
 */
export async function queueCallback(tx: Tx, event: EventToDeliver, url: string, now: string): Promise<CallbackEvent> {
  const row = {
    id: event.id,
    invoice_id: event.invoiceId,
    subject_id: event.subjectId,
    merchant_id: event.merchantId,
    type: event.type,
    url,
    destination: destinationOf(url),
    body: event.body,
    status: "pending",
    attempt_count: 0,
    schedule_position: 0,
    next_attempt_at: now,
    lease_until: null,
    claim_token: null,
    delivered_at: null,
    created_at: now,
    updated_at: now,
  } satisfies Omit<CallbackEventsTable, "seq">;
  const inserted = await tx.db.insertInto("callback_events").values(row).returning("seq").executeTakeFirstOrThrow();
  return eventFromRow({ ...row, seq: Number(inserted.seq) });
}

export interface ClaimOptions {
  now: string;
  leaseUntil: string;
  /** Names this claim: only its holder may complete the events, so a late worker cannot overwrite a newer claim. */
  token: string;
  limit: number;
  /** Destinations that already have as many attempts in flight as they may. */
  excludeDestinations: readonly string[];
  /** Merchants that already have as many attempts in flight as they may. */
  excludeMerchants?: readonly string[];
  /** Merchants with an attempt in flight: they come after merchants with none (fairness). */
  busyMerchants?: readonly string[];
  /** At most this many events of one merchant in one claim. */
  perMerchant?: number;
  /** At most this many events to one destination in one claim. */
  perDestination?: number;
}

/**
 * Claims due events under a lease: pending, due, not leased by a live claim, and the oldest
 * undelivered event of their subject (events of one invoice or request go out in order). Merchants take
 * turns: each merchant's oldest due event ranks before any merchant's second, merchants with
 * nothing in flight before those with something, so one merchant's backlog (however many
 * destinations it spreads over) cannot hold another merchant's event back for longer than a slot
 * takes to free. The claiming UPDATE re-checks the lease, so concurrent workers (several processes
 * on PostgreSQL) never claim one event twice; on SQLite it runs under the database's write lock.
 */
// longer than 70 lines: one claiming statement (the ranked choice and the UPDATE over it), built in one
// place so that its fairness rule reads as one query on both stores.
export async function claimDueCallbacks(tx: Tx, options: ClaimOptions): Promise<CallbackEvent[]> {
  assert(options.limit > 0 && options.limit <= 1000, "a claim is bounded");
  const perMerchant = options.perMerchant ?? options.limit;
  const perDestination = options.perDestination ?? options.limit;
  assert(perMerchant > 0 && perDestination > 0, "a claim takes at least one event per merchant and destination");
  const { now } = options;
  const busy = [...(options.busyMerchants ?? [])];
  // Each destination's oldest events first, then each merchant's turns across its destinations.
  const byDestination = tx.db
    .selectFrom("callback_events as e")
    .select([
      "e.id",
      "e.merchant_id",
      "e.next_attempt_at",
      "e.seq",
      sql<number>`row_number() over (partition by e.merchant_id, e.destination order by e.next_attempt_at, e.seq)`.as(
        "destination_turn",
      ),
    ])
    .where("e.status", "=", "pending")
    .where("e.next_attempt_at", "<=", now)
    .where((eb) => eb.or([eb("e.lease_until", "is", null), eb("e.lease_until", "<=", now)]))
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom("callback_events as older")
            .select("older.seq")
            .whereRef("older.subject_id", "=", "e.subject_id")
            .whereRef("older.seq", "<", "e.seq")
            .where("older.status", "=", "pending"),
        ),
      ),
    )
    .$if(options.excludeDestinations.length > 0, (qb) =>
      qb.where("e.destination", "not in", [...options.excludeDestinations]),
    )
    .$if((options.excludeMerchants ?? []).length > 0, (qb) =>
      qb.where("e.merchant_id", "not in", [...(options.excludeMerchants ?? [])]),
    );
  const ranked = tx.db
    .selectFrom(byDestination.as("d"))
    .select([
      "d.id",
      "d.merchant_id",
      "d.next_attempt_at",
      "d.seq",
      sql<number>`row_number() over (partition by d.merchant_id order by d.destination_turn, d.next_attempt_at, d.seq)`.as(
        "turn",
      ),
    ])
    .where("d.destination_turn", "<=", perDestination);
  const candidates = tx.db
    .selectFrom(ranked.as("r"))
    .select("r.id")
    .where("r.turn", "<=", perMerchant)
    .orderBy("r.turn")
    .$if(busy.length > 0, (qb) =>
      qb.orderBy(sql`case when ${sql.ref("r.merchant_id")} in (${sql.join(busy)}) then 1 else 0 end`),
    )
    .orderBy("r.next_attempt_at")
    .orderBy("r.seq")
    .limit(options.limit);
  const rows = await tx.db
    .updateTable("callback_events")
    .set({ lease_until: options.leaseUntil, claim_token: options.token })
    .where("id", "in", candidates)
    // Re-checked on the row as it is when locked: a concurrent claim that won it is left alone.
    .where("status", "=", "pending")
    .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<=", now)]))
    .returningAll()
    .execute();
  return rows.map(eventFromRow).sort((a, b) => a.nextAttemptAt!.localeCompare(b.nextAttemptAt!) || a.seq - b.seq);
}

/** Gives claimed events back without attempting them (a destination already had enough in flight). */
export async function releaseCallbackClaims(tx: Tx, eventIds: readonly string[], token: string): Promise<void> {
  if (eventIds.length === 0) return;
  await tx.db
    .updateTable("callback_events")
    .set({ lease_until: null, claim_token: null })
    .where("id", "in", [...eventIds])
    .where("claim_token", "=", token)
    .execute();
}

export type AttemptOutcome =
  | { status: "delivered" }
  | { status: "pending"; nextAttemptAt: string }
  | { status: "failed" };

export interface CompletedAttempt {
  eventId: string;
  token: string;
  attempt: Omit<CallbackAttempt, "number">;
  outcome: AttemptOutcome;
  now: string;
}

/**
 * Records an attempt and, if the claim is still this worker's, the event's new state. The attempt
 * is recorded either way (it happened); a claim lost to an expired lease leaves the event to its new holder.
 * Answers whether the claim was still held.
 */
export async function completeCallbackAttempt(tx: Tx, done: CompletedAttempt): Promise<boolean> {
  const row = await tx.db
    .selectFrom("callback_events")
    .select(["attempt_count", "schedule_position", "claim_token"])
    .where("id", "=", done.eventId)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  assert(row !== undefined, "an attempted event exists");
  const number = Number(row.attempt_count) + 1;
  await tx.db
    .insertInto("callback_attempts")
    .values({
      event_id: done.eventId,
      number,
      started_at: done.attempt.startedAt,
      duration_ms: done.attempt.durationMs,
      status_code: done.attempt.statusCode,
      error: done.attempt.error,
      response_body: done.attempt.responseBody,
    })
    .execute();
  const held = row.claim_token === done.token;
  const { outcome } = done;
  await tx.db
    .updateTable("callback_events")
    .set({
      attempt_count: number,
      updated_at: done.now,
      ...(held
        ? {
            status: outcome.status,
            schedule_position: outcome.status === "delivered" ? row.schedule_position : row.schedule_position + 1,
            next_attempt_at: outcome.status === "pending" ? outcome.nextAttemptAt : null,
            delivered_at: outcome.status === "delivered" ? done.now : null,
            lease_until: null,
            claim_token: null,
          }
        : {}),
    })
    .where("id", "=", done.eventId)
    .execute();
  return held;
}

export async function findCallbackEvent(tx: Tx, eventId: string): Promise<CallbackEvent | null> {
  const r = await tx.db.selectFrom("callback_events").selectAll().where("id", "=", eventId).executeTakeFirst();
  return r ? eventFromRow(r) : null;
}

export interface CallbackEventWithAttempts extends CallbackEvent {
  attempts: CallbackAttempt[];
}

async function withAttempts(tx: Tx, events: CallbackEvent[]): Promise<CallbackEventWithAttempts[]> {
  if (events.length === 0) return [];
  const rows = await tx.db
    .selectFrom("callback_attempts")
    .select(["event_id", "number", "started_at", "duration_ms", "status_code", "error", "response_body"])
    .where(
      "event_id",
      "in",
      events.map((e) => e.id),
    )
    .orderBy("event_id")
    .orderBy("number")
    .execute();
  const byEvent = new Map<string, CallbackAttempt[]>();
  for (const r of rows) {
    const list = byEvent.get(r.event_id) ?? [];
    list.push(attemptFromRow(r));
    byEvent.set(r.event_id, list);
  }
  return events.map((e) => ({ ...e, attempts: byEvent.get(e.id) ?? [] }));
}

/** An invoice's events, oldest first, each with its attempts in order. */
export async function listInvoiceCallbacks(tx: Tx, invoiceId: string): Promise<CallbackEventWithAttempts[]> {
  const rows = await tx.db
    .selectFrom("callback_events")
    .selectAll()
    .where("invoice_id", "=", invoiceId)
    .orderBy("seq")
    .execute();
  return withAttempts(tx, rows.map(eventFromRow));
}

export async function findCallbackEventWithAttempts(
  tx: Tx,
  eventId: string,
): Promise<CallbackEventWithAttempts | null> {
  const event = await findCallbackEvent(tx, eventId);
  return event ? ((await withAttempts(tx, [event]))[0] ?? null) : null;
}

export type RedeliveryError = "callback_event_not_found" | "callback_delivery_in_progress";

/**
 * Makes an event due now with a fresh retry schedule, whatever its status (a failed or delivered
 * event is sent again, with the same id and body). An attempt in flight under a live lease is left
 * to finish: redelivering it too would send it twice at once.
 */
export async function scheduleRedelivery(
  tx: Tx,
  eventId: string,
  now: string,
): Promise<Result<CallbackEvent, RedeliveryError>> {
  const r = await tx.db
    .selectFrom("callback_events")
    .select(["lease_until"])
    .where("id", "=", eventId)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  if (!r) return err("callback_event_not_found");
  if (r.lease_until !== null && r.lease_until > now) return err("callback_delivery_in_progress");
  await tx.db
    .updateTable("callback_events")
    .set({
      status: "pending",
      schedule_position: 0,
      next_attempt_at: now,
      lease_until: null,
      claim_token: null,
      updated_at: now,
    })
    .where("id", "=", eventId)
    .execute();
  const event = await findCallbackEvent(tx, eventId);
  assert(event !== null, "the redelivered event exists");
  return ok(event);
}

export async function invoiceExists(tx: Tx, invoiceId: string): Promise<boolean> {
  const r = await tx.db.selectFrom("invoices").select("id").where("id", "=", invoiceId).executeTakeFirst();
  return r !== undefined;
}
