// Safe retries (interface "Safe retries"): what a request id that was already recorded answers.

/** A request id as the store recorded it. */
export interface RecordedRequest {
  merchantId: string;
  route: string;
  bodyHash: string;
  /** `running` rows are only ever visible to the transaction that claimed them (or after a bug). */
  state: "running" | "completed";
  responseStatus: number | null;
  responseBody: string | null;
}

export interface IncomingRequest {
  merchantId: string;
  route: string;
  bodyHash: string;
}

export type RetryConflict =
  | "request_id_unavailable"
  | "request_id_reused"
  | "request_in_progress"
  | "request_needs_reconciliation";

export type RetryVerdict =
  | { readonly kind: "replay"; readonly status: number; readonly body: string }
  | { readonly kind: "conflict"; readonly code: RetryConflict };

/**
 * Decides a retry. Another merchant's id comes first so that nothing of that operation (its route,
 * its body, its state) shapes the answer; then same route and body; then whether the original is done.
 */
export function judgeRetry(
  recorded: RecordedRequest,
  incoming: IncomingRequest,
  needsReconciliation: boolean,
): RetryVerdict {
  if (recorded.merchantId !== incoming.merchantId) return { kind: "conflict", code: "request_id_unavailable" };
  if (recorded.route !== incoming.route || recorded.bodyHash !== incoming.bodyHash) {
    return { kind: "conflict", code: "request_id_reused" };
  }
  if (recorded.state !== "completed" || recorded.responseStatus === null || recorded.responseBody === null) {
    return { kind: "conflict", code: "request_in_progress" };
  }
  if (needsReconciliation) return { kind: "conflict", code: "request_needs_reconciliation" };
  return { kind: "replay", status: recorded.responseStatus, body: recorded.responseBody };
}
