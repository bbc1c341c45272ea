// Signed request repository: claims a request id inside the operation's own transaction and records its response.
import { sql } from "kysely";
import type { RecordedRequest } from "../domain/idempotency.ts";
import { assert } from "../domain/result.ts";
import { placeholder, preparedQuery, preparedStatement } from "./prepared.ts";
import type { SignedRequestsTable } from "./schema.ts";
import type { Tx } from "./store.ts";

export interface SignedRequestFields {
  /** Lowercased request id. */
  requestKey: string;
  /** The request id exactly as sent. */
  requestIdSent: string;
  merchantId: string;
  route: string;
  bodyHash: string;
}

export type Claim =
  | { readonly kind: "claimed" }
  | { readonly kind: "recorded"; readonly recorded: RecordedRequest }
  | { readonly kind: "in_progress" };

function recorded(row: SignedRequestsTable): RecordedRequest {
  return {
    merchantId: row.merchant_id,
    route: row.route,
    bodyHash: row.body_hash,
    state: row.state === "completed" ? "completed" : "running",
    responseStatus: row.response_status === null ? null : Number(row.response_status),
    responseBody: row.response_body,
  };
}

// Every signed request runs these: compiled once (see prepared.ts).
const findQuery = preparedQuery(["requestKey"] as const, (db, a) =>
  db.selectFrom("signed_requests").selectAll().where("request_id", "=", a.requestKey),
);

/** How long a claim waits for a concurrent holder of the same request id: 40 × 25 ms = 1 s at most. */
const LOCK_WAIT_ATTEMPTS = 40;
const LOCK_WAIT_STEP_MS = 25;

const advisoryLockQuery = preparedQuery(["lockKey"] as const, (db, a) => ({
  compile: () =>
    sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(hashtextextended(${a.lockKey}, 0)) as locked`.compile(db),
}));

const claimStatement = preparedStatement(
  ["requestKey", "requestIdSent", "merchantId", "route", "bodyHash", "now"] as const,
  (db, a) =>
    db
      .insertInto("signed_requests")
      .values({
        request_id: a.requestKey,
        request_id_sent: a.requestIdSent,
        merchant_id: a.merchantId,
        route: a.route,
        body_hash: a.bodyHash,
        state: "running",
        response_status: null,
        response_body: null,
        created_at: a.now,
        updated_at: a.now,
      })
      .onConflict((oc) => oc.column("request_id").doNothing()),
);

const completeStatement = preparedStatement(["requestKey", "status", "body", "now"] as const, (db, a) =>
  db
    .updateTable("signed_requests")
    .set({
      state: "completed",
      response_status: placeholder<number>(a.status),
      response_body: a.body,
      updated_at: a.now,
    })
    .where("request_id", "=", a.requestKey)
    .where("state", "=", "running"),
);

export async function findSignedRequest(tx: Tx, requestKey: string): Promise<RecordedRequest | null> {
  const [row] = await findQuery(tx, { requestKey });
  return row ? recorded(row) : null;
}

/**
 * Claims a request id for the calling transaction, which must then either record a response with
 * completeSignedRequest or roll back (leaving no trace). On PostgreSQL a transaction-scoped advisory
 * lock on the id is taken first. A concurrent holder is waited for, briefly (the holder's
 * transaction is one operation, milliseconds long): once it commits, the committed row answers
 * exactly (a replay, a reuse, or another merchant's id, which must reveal nothing, not even that
 * it is running). Only a holder still running after the bound is answered "in progress". The
 * wait polls a non-blocking try-lock, because a lock timeout would abort the transaction. The INSERT ... ON CONFLICT
 * DO NOTHING then cannot block on an uncommitted row, since every inserter holds that lock; on
 * SQLite the write lock serializes transactions. A conflicting insert is inspected, never raised,
 * so the transaction stays usable to read the row that won.
 */
export async function claimSignedRequest(tx: Tx, fields: SignedRequestFields, now: string): Promise<Claim> {
  if (tx.dialect === "postgres") {
    let locked = false;
    for (let attempt = 0; attempt < LOCK_WAIT_ATTEMPTS && !locked; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, LOCK_WAIT_STEP_MS));
      const [lock] = await advisoryLockQuery(tx, { lockKey: `signed_request:${fields.requestKey}` });
      locked = lock?.locked === true;
    }
    if (!locked) return { kind: "in_progress" };
  }
  const inserted = await claimStatement(tx, { ...fields, now });
  if (inserted.affected > 0n) return { kind: "claimed" };
  const existing = await findSignedRequest(tx, fields.requestKey);
  // A conflicting row that cannot be read was rolled back in between: still someone else's attempt.
  return existing ? { kind: "recorded", recorded: existing } : { kind: "in_progress" };
}

/** Records the response of a claimed request id, in the transaction that claimed it. */
export async function completeSignedRequest(
  tx: Tx,
  requestKey: string,
  response: { status: number; body: string },
  now: string,
): Promise<void> {
  const result = await completeStatement(tx, { requestKey, status: response.status, body: response.body, now });
  assert(result.affected === 1n, `request ${requestKey} was claimed by this transaction`);
}
