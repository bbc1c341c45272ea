// Idempotency of money operations (product §8): one request id, one operation, one recorded answer.
import { judgeRetry, type RetryVerdict } from "../domain/idempotency.ts";
import { findPayout } from "../store/payouts.ts";
import { claimSignedRequest, completeSignedRequest } from "../store/signedRequests.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";

/**
 * A money operation under a request id: what idempotency and the operation work with. The signed
 * API and the dashboard both send one (the dashboard's form carries a request id made once per form),
 * and both are recorded in the same request-id records, so an id is one operation across the two.
 */
export interface IdempotentRequest {
  /** The signed route, or the dashboard route, the request id was first used on. */
  route: string;
  merchantId: string;
  /** The request id exactly as sent in this request. */
  requestIdSent: string;
  /** The request id lowercased: the key it is recorded under. */
  requestKey: string;
  bodyHash: string;
}

/**
 * Runs an operation exactly once per request id: claims the id, runs `operate` and records its
 * response, all in one database transaction. A refusal of `operate` (`refuse`, a 400) rolls it all
 * back, so nothing is recorded and the id stays usable. A concurrent or earlier holder of the id
 * gets the original response or a 409. The signed operations and the dashboard's money actions
 * both run through here.
 */
export function performOnce<R extends IdempotentRequest>(
  ctx: ServiceContext,
  idempotent: R,
  operate: (tx: Tx, request: R, now: string) => Promise<unknown>,
): Promise<RetryVerdict> {
  return ctx.store.transaction(async (tx): Promise<RetryVerdict> => {
    const now = nowIso();
    const claim = await claimSignedRequest(tx, idempotent, now);
    if (claim.kind === "in_progress") return { kind: "conflict", code: "request_in_progress" };
    if (claim.kind === "recorded") {
      return judgeRetry(claim.recorded, idempotent, await needsReconciliation(tx, idempotent.requestKey));
    }
    const body = JSON.stringify(await operate(tx, idempotent, now));
    await completeSignedRequest(tx, idempotent.requestKey, { status: 200, body }, now);
    return { kind: "replay", status: 200, body };
  });
}

/** performOnce of `operate`, and `alsoInTx` with its answer in the same transaction (the dashboard's audit record). */
export function performOnceThen<R extends IdempotentRequest, A>(
  ctx: ServiceContext,
  idempotent: R,
  operate: (tx: Tx, request: R, now: string) => Promise<A>,
  alsoInTx?: (tx: Tx, answer: A) => Promise<unknown>,
): Promise<RetryVerdict> {
  return performOnce(ctx, idempotent, async (tx, r, now) => {
    const answer = await operate(tx, r, now);
    await alsoInTx?.(tx, answer);
    return answer;
  });
}

/** Whether the payout of a request id awaits reconciliation (its retry is answered 409 until then). */
export async function needsReconciliation(tx: Tx, requestKey: string): Promise<boolean> {
  const payout = await findPayout(tx, requestKey);
  return payout?.state === "needs_reconciliation";
}
