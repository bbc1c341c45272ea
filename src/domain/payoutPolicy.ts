// Payout policies (product §31): the limits per payout and per rolling 24 hours above which a payout waits for approvals, and how a change of them takes effect.

/** Approvals a policy may ask for above its limits: 0 (the limits have no effect) to 3. */
export const MAX_APPROVALS = 3;
/** The window of the daily limit: the 24 hours before the payout. */
export const POLICY_WINDOW_MS = 24 * 3_600_000;

/** A merchant's limits for one currency, in its minor units; null: no such limit. */
export interface PayoutLimits {
  readonly perPayoutLimit: bigint | null;
  readonly dailyLimit: bigint | null;
  readonly approvalsRequired: number;
}

/** A stored policy: what applies now, and a loosening that applies once its cooling-off is over. */
export interface PayoutPolicy extends PayoutLimits {
  readonly pending: (PayoutLimits & { readonly effectiveAt: string }) | null;
}

/** Why a payout waits for approvals. */
export type ApprovalReason = "per_payout_limit" | "daily_limit";

export type PolicyDecision =
  | { readonly kind: "send" }
  | { readonly kind: "await_approval"; readonly approvalsRequired: number; readonly reason: ApprovalReason };

/** The limits in force at `now`: a pending loosening once its cooling-off is over. */
export function limitsAt(policy: PayoutPolicy, now: string): PayoutLimits {
  const pending = policy.pending;
  const inForce = pending !== null && pending.effectiveAt <= now ? pending : policy;
  return {
    perPayoutLimit: inForce.perPayoutLimit,
    dailyLimit: inForce.dailyLimit,
    approvalsRequired: inForce.approvalsRequired,
  };
}

/**
 * Whether a payout of `amount` waits for approvals, given what the merchant paid out in that
 * currency in the window before it without waiting (`paidInWindow`). Zero approvals: no limit applies.
 */
export function decidePayout(limits: PayoutLimits, amount: bigint, paidInWindow: bigint): PolicyDecision {
  if (limits.approvalsRequired === 0) return { kind: "send" };
  const approvalsRequired = limits.approvalsRequired;
  if (limits.perPayoutLimit !== null && amount > limits.perPayoutLimit) {
    return { kind: "await_approval", approvalsRequired, reason: "per_payout_limit" };
  }
  if (limits.dailyLimit !== null && paidInWindow + amount > limits.dailyLimit) {
    return { kind: "await_approval", approvalsRequired, reason: "daily_limit" };
  }
  return { kind: "send" };
}

/** The lower of two limits, null being no limit. */
function lowerLimit(a: bigint | null, b: bigint | null): bigint | null {
  if (a === null) return b;
  if (b === null) return a;
  return a < b ? a : b;
}

/** A policy's limits, field by field the stricter of two. */
export function stricter(a: PayoutLimits, b: PayoutLimits): PayoutLimits {
  return {
    perPayoutLimit: lowerLimit(a.perPayoutLimit, b.perPayoutLimit),
    dailyLimit: lowerLimit(a.dailyLimit, b.dailyLimit),
    approvalsRequired: Math.max(a.approvalsRequired, b.approvalsRequired),
  };
}

export function sameLimits(a: PayoutLimits, b: PayoutLimits): boolean {
  return (
    a.perPayoutLimit === b.perPayoutLimit &&
    a.dailyLimit === b.dailyLimit &&
    a.approvalsRequired === b.approvalsRequired
  );
}

/**
 * The policy after a change. Whatever tightens applies at once (field by field, the stricter of
 * the limits now in force and the new ones); whatever loosens waits `coolingOffMs` (product §14),
 * as a pending policy that replaces the one in force at `effectiveAt`. With no cooling-off (the
 * operator's changes, or a sandbox) the new limits apply at once.
 */
export function changePolicy(
  current: PayoutPolicy | null,
  next: PayoutLimits,
  now: string,
  coolingOffMs: number,
): PayoutPolicy {
  const limits = current === null ? NO_LIMITS : limitsAt(current, now);
  // Limits without approvals have no effect: from there, any policy only tightens.
  const inForce = limits.approvalsRequired === 0 ? NO_LIMITS : limits;
  const atOnce = stricter(inForce, next);
  if (coolingOffMs === 0 || sameLimits(atOnce, next)) return { ...next, pending: null };
  const effectiveAt = new Date(Date.parse(now) + coolingOffMs).toISOString();
  return { ...atOnce, pending: { ...next, effectiveAt } };
}

/** A merchant without a policy: nothing waits. */
export const NO_LIMITS: PayoutLimits = { perPayoutLimit: null, dailyLimit: null, approvalsRequired: 0 };

/** Whether an approval request, with these decisions, is approved (enough approvals) or rejected (any rejection). */
export function approvalOutcome(
  approvalsRequired: number,
  decisions: readonly ("approve" | "reject")[],
): "approved" | "rejected" | "pending" {
  if (decisions.includes("reject")) return "rejected";
  return decisions.length >= approvalsRequired ? "approved" : "pending";
}
