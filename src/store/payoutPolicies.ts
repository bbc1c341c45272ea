// Payout policy repository (product §31): a merchant's limits per currency, the rolling 24-hour sum they are checked against, the payouts awaiting approval and each approver's decision.
import { type ApprovalReason, type PayoutLimits, type PayoutPolicy, POLICY_WINDOW_MS } from "../domain/payoutPolicy.ts";
import type { Tx } from "./store.ts";

const limitOf = (text: string | null): bigint | null => (text === null ? null : BigInt(text));
const textOf = (limit: bigint | null): string | null => (limit === null ? null : limit.toString());

/**
 * A merchant's policy in one currency, or null without one. `lock` (PostgreSQL FOR UPDATE) makes
 * the policy row the lock that payouts of that merchant and currency take turns on, so each one
 * sums what the ones before it committed; SQLite serializes writers anyway.
 */
export async function findPayoutPolicy(
  tx: Tx,
  merchantId: string,
  currency: string,
  lock = false,
): Promise<PayoutPolicy | null> {
  const row = await tx.db
    .selectFrom("payout_policies")
    .selectAll()
    .where("merchant_id", "=", merchantId)
    .where("currency", "=", currency)
    .$if(lock && tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  if (!row) return null;
  const pending =
    row.pending_effective_at === null
      ? null
      : {
          perPayoutLimit: limitOf(row.pending_per_payout_limit),
          dailyLimit: limitOf(row.pending_daily_limit),
          approvalsRequired: Number(row.pending_approvals_required ?? 0),
          effectiveAt: row.pending_effective_at,
        };
  return {
    perPayoutLimit: limitOf(row.per_payout_limit),
    dailyLimit: limitOf(row.daily_limit),
    approvalsRequired: Number(row.approvals_required),
    pending,
  };
}

/** A merchant's policies, every currency. */
export async function listPayoutPolicies(
  tx: Tx,
  merchantId: string,
): Promise<{ currency: string; policy: PayoutPolicy; updatedAt: string }[]> {
  const rows = await tx.db
    .selectFrom("payout_policies")
    .select(["currency", "updated_at"])
    .where("merchant_id", "=", merchantId)
    .orderBy("currency")
    .execute();
  const policies = [];
  for (const r of rows) {
    const policy = await findPayoutPolicy(tx, merchantId, r.currency);
    if (policy) policies.push({ currency: r.currency, policy, updatedAt: r.updated_at });
  }
  return policies;
}

/** Writes a policy (insert or replace). */
export async function savePayoutPolicy(
  tx: Tx,
  key: { merchantId: string; currency: string },
  policy: PayoutPolicy,
  now: string,
): Promise<void> {
  const pending = policy.pending;
  const values = {
    per_payout_limit: textOf(policy.perPayoutLimit),
    daily_limit: textOf(policy.dailyLimit),
    approvals_required: policy.approvalsRequired,
    pending_per_payout_limit: pending ? textOf(pending.perPayoutLimit) : null,
    pending_daily_limit: pending ? textOf(pending.dailyLimit) : null,
    pending_approvals_required: pending ? pending.approvalsRequired : null,
    pending_effective_at: pending ? pending.effectiveAt : null,
    updated_at: now,
  };
  await tx.db
    .insertInto("payout_policies")
    .values({ merchant_id: key.merchantId, currency: key.currency, ...values })
    .onConflict((oc) => oc.columns(["merchant_id", "currency"]).doUpdateSet(values))
    .execute();
}

/**
 * What a merchant paid out in a currency in the 24 hours before `now` without waiting for
 * approval, or once approved: every payout except those awaiting approval and those that failed
 * (nothing left). Summed here, not in SQL: amounts are text and may exceed 64 bits.
 */
export async function paidInWindow(tx: Tx, merchantId: string, currency: string, now: string): Promise<bigint> {
  const since = new Date(Date.parse(now) - POLICY_WINDOW_MS).toISOString();
  const rows = await tx.db
    .selectFrom("payouts")
    .select("amount")
    .where("merchant_id", "=", merchantId)
    .where("currency", "=", currency)
    .where("created_at", ">", since)
    .where("state", "not in", ["awaiting_approval", "failed"])
    .execute();
  return rows.reduce((sum, r) => sum + BigInt(r.amount), 0n);
}

export interface ApprovalRequest {
  requestKey: string;
  merchantId: string;
  approvalsRequired: number;
  reason: ApprovalReason;
  initiatorUserId: string | null;
  state: "pending" | "approved" | "rejected";
  createdAt: string;
  decidedAt: string | null;
}

export async function insertApprovalRequest(
  tx: Tx,
  request: Pick<ApprovalRequest, "requestKey" | "merchantId" | "approvalsRequired" | "reason">,
  now: string,
): Promise<void> {
  await tx.db
    .insertInto("payout_approval_requests")
    .values({
      request_id: request.requestKey,
      merchant_id: request.merchantId,
      approvals_required: request.approvalsRequired,
      reason: request.reason,
      initiator_user_id: null,
      state: "pending",
      created_at: now,
      decided_at: null,
    })
    .execute();
}

/** Names the dashboard user who made a payout waiting for approval (in its transaction): that user never counts as its approver. */
export async function setApprovalInitiator(tx: Tx, requestKey: string, userId: string): Promise<void> {
  await tx.db
    .updateTable("payout_approval_requests")
    .set({ initiator_user_id: userId })
    .where("request_id", "=", requestKey)
    .execute();
}

type ApprovalRow = {
  request_id: string;
  merchant_id: string;
  approvals_required: number;
  reason: string;
  initiator_user_id: string | null;
  state: string;
  created_at: string;
  decided_at: string | null;
};

function requestOf(r: ApprovalRow): ApprovalRequest {
  return {
    requestKey: r.request_id,
    merchantId: r.merchant_id,
    approvalsRequired: Number(r.approvals_required),
    reason: r.reason as ApprovalReason,
    initiatorUserId: r.initiator_user_id,
    state: r.state as ApprovalRequest["state"],
    createdAt: r.created_at,
    decidedAt: r.decided_at,
  };
}

/** A payout's approval request; `lock` takes its row (PostgreSQL FOR UPDATE) so parallel decisions take turns. */
export async function findApprovalRequest(tx: Tx, requestKey: string, lock = false): Promise<ApprovalRequest | null> {
  const row = await tx.db
    .selectFrom("payout_approval_requests")
    .selectAll()
    .where("request_id", "=", requestKey)
    .$if(lock && tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  return row ? requestOf(row) : null;
}

/** A merchant's approval requests, newest first: the pending ones, or the decided ones too. */
export async function listApprovalRequests(
  tx: Tx,
  merchantId: string,
  filter: { pendingOnly: boolean; limit: number },
): Promise<ApprovalRequest[]> {
  const rows = await tx.db
    .selectFrom("payout_approval_requests")
    .selectAll()
    .where("merchant_id", "=", merchantId)
    .$if(filter.pendingOnly, (qb) => qb.where("state", "=", "pending"))
    .orderBy("created_at", "desc")
    .orderBy("request_id", "desc")
    .limit(filter.limit)
    .execute();
  return rows.map(requestOf);
}

export async function closeApprovalRequest(
  tx: Tx,
  requestKey: string,
  state: "approved" | "rejected",
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("payout_approval_requests")
    .set({ state, decided_at: now })
    .where("request_id", "=", requestKey)
    .where("state", "=", "pending")
    .execute();
}

export interface ApprovalDecision {
  userId: string;
  decision: "approve" | "reject";
  createdAt: string;
}

/** Records one approver's decision; false when that approver already decided (the primary key holds it once). */
export async function insertApprovalDecision(tx: Tx, requestKey: string, decision: ApprovalDecision): Promise<boolean> {
  const result = await tx.db
    .insertInto("payout_approvals")
    .values({
      request_id: requestKey,
      user_id: decision.userId,
      decision: decision.decision,
      created_at: decision.createdAt,
    })
    .onConflict((oc) => oc.columns(["request_id", "user_id"]).doNothing())
    .returning("user_id")
    .execute();
  return result.length === 1;
}

export async function approvalDecisions(
  tx: Tx,
  requestKeys: readonly string[],
): Promise<Map<string, ApprovalDecision[]>> {
  const byRequest = new Map<string, ApprovalDecision[]>();
  if (requestKeys.length === 0) return byRequest;
  const rows = await tx.db
    .selectFrom("payout_approvals")
    .selectAll()
    .where("request_id", "in", requestKeys)
    .orderBy("created_at")
    .execute();
  for (const r of rows) {
    const list = byRequest.get(r.request_id) ?? [];
    list.push({ userId: r.user_id, decision: r.decision as ApprovalDecision["decision"], createdAt: r.created_at });
    byRequest.set(r.request_id, list);
  }
  return byRequest;
}

export type { PayoutLimits };
