// Payout policies and approvals (product §31): set a merchant's limits per currency, list the payouts waiting for approvals, approve or reject one exactly once.
import { type Static, Type } from "typebox";
import { formatAmount, parseAmount } from "../domain/money.ts";
import type { PayoutOperation } from "../domain/payout.ts";
import {
  type ApprovalReason,
  approvalOutcome,
  changePolicy,
  limitsAt,
  MAX_APPROVALS,
  type PayoutLimits,
  type PayoutPolicy,
} from "../domain/payoutPolicy.ts";
import { assert } from "../domain/result.ts";
import { findCurrency, resolveCurrencyName } from "../store/currencies.ts";
import { findMerchant } from "../store/merchants.ts";
import {
  type ApprovalRequest,
  approvalDecisions,
  closeApprovalRequest,
  findApprovalRequest,
  findPayoutPolicy,
  insertApprovalDecision,
  listApprovalRequests,
  listPayoutPolicies,
  savePayoutPolicy,
} from "../store/payoutPolicies.ts";
import { findPayout, recordApprovalEvent, releaseApprovedPayout, settlePayout } from "../store/payouts.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

const Limit = Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()], {
  description: "A monetary string in the currency; null: no such limit",
});

export const PayoutPolicyBody = Type.Object(
  {
    perPayoutLimit: Limit,
    dailyLimit: Limit,
    approvalsRequired: Type.Integer({
      minimum: 0,
      maximum: MAX_APPROVALS,
      description: "Approvals a payout over a limit waits for; 0: the limits have no effect",
    }),
  },
  { additionalProperties: false },
);
export type PayoutPolicyInput = Static<typeof PayoutPolicyBody>;

/** A policy as both APIs answer it: the limits in force now, and a loosening still in its cooling-off. */
export interface PayoutPolicyView {
  currency: string;
  perPayoutLimit: string | null;
  dailyLimit: string | null;
  approvalsRequired: number;
  pending: {
    perPayoutLimit: string | null;
    dailyLimit: string | null;
    approvalsRequired: number;
    effectiveAt: string;
  } | null;
}

function limitsView(limits: PayoutLimits, decimals: number) {
  const text = (v: bigint | null) => (v === null ? null : formatAmount(v, decimals));
  return {
    perPayoutLimit: text(limits.perPayoutLimit),
    dailyLimit: text(limits.dailyLimit),
    approvalsRequired: limits.approvalsRequired,
  };
}

export function policyView(currency: string, decimals: number, policy: PayoutPolicy, now: string): PayoutPolicyView {
  const pending = policy.pending !== null && policy.pending.effectiveAt > now ? policy.pending : null;
  return {
    currency,
    ...limitsView(limitsAt(policy, now), decimals),
    pending: pending === null ? null : { ...limitsView(pending, decimals), effectiveAt: pending.effectiveAt },
  };
}

export type PolicyRefusal =
  | "merchant_not_found"
  | "unknown_currency"
  | "ambiguous_currency"
  | "invalid_amount"
  | "amount_not_positive"
  | "amount_too_precise";

function parseLimit(text: string | null, decimals: number, pointer: string): bigint | null {
  if (text === null) return null;
  const parsed = parseAmount(text, decimals);
  if (!parsed.ok) refuse(parsed.error, `${pointer.slice(1)} must be a positive amount in the currency.`, pointer);
  return parsed.value;
}

/**
 * Sets a merchant's payout policy in one currency: a tightening at once, a loosening after
 * `coolingOffMs` (the operator's changes pass 0). `alsoInTx` writes the dashboard's audit record.
 */
export function setPayoutPolicy(
  ctx: ServiceContext,
  target: { merchantId: string; currency: string },
  input: PayoutPolicyInput,
  coolingOffMs: number,
  alsoInTx?: (tx: Tx, view: PayoutPolicyView) => Promise<unknown>,
): Promise<Outcome<PayoutPolicyView, PolicyRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      if (!(await findMerchant(tx, target.merchantId)))
        refuse("merchant_not_found", "No merchant with this id.", "/", null);
      const named = await resolveCurrencyName(tx, target.currency);
      if (named !== null && named.restricted === null && named.entries.length > 1) {
        refuse(
          "ambiguous_currency",
          `${target.currency} has several entries: name one by its internalTicker.`,
          "/",
          null,
        );
      }
      const currency = named === null ? null : (named.restricted ?? named.primary);
      if (!currency) refuse("unknown_currency", `Unknown currency ${target.currency}.`, "/", null);
      const next: PayoutLimits = {
        perPayoutLimit: parseLimit(input.perPayoutLimit, currency.decimals, "/perPayoutLimit"),
        dailyLimit: parseLimit(input.dailyLimit, currency.decimals, "/dailyLimit"),
        approvalsRequired: input.approvalsRequired,
      };
      const key = { merchantId: target.merchantId, currency: currency.ticker };
      const now = nowIso();
      // The row locked: two changes of one policy take turns, each from the other's result.
      const current = await findPayoutPolicy(tx, key.merchantId, key.currency, true);
      const changed = changePolicy(current, next, now, coolingOffMs);
      await savePayoutPolicy(tx, key, changed, now);
      const view = policyView(currency.ticker, currency.decimals, changed, now);
      await alsoInTx?.(tx, view);
      return view;
    }),
  );
}

/** A merchant's policies, every currency, as in force now. */
export async function payoutPolicies(ctx: ServiceContext, merchantId: string): Promise<PayoutPolicyView[]> {
  const now = nowIso();
  const views = [];
  for (const { currency, policy } of await listPayoutPolicies(ctx.store, merchantId)) {
    const entry = await findCurrency(ctx.store, currency);
    assert(entry !== null, `policy currency ${currency} is in the catalog`);
    views.push(policyView(currency, entry.decimals, policy, now));
  }
  return views;
}

/** A payout waiting for approvals (or decided), as the dashboard's queue shows it. */
export interface ApprovalView {
  requestId: string;
  operation: PayoutOperation;
  currency: string;
  amount: string;
  destination: string;
  reason: ApprovalReason;
  approvalsRequired: number;
  initiatorUserId: string | null;
  state: ApprovalRequest["state"];
  decisions: { userId: string; decision: "approve" | "reject"; at: string }[];
  createdAt: string;
  decidedAt: string | null;
}

/** The merchant's approval requests, newest first (pending only unless `all`). */
export async function listApprovals(
  ctx: ServiceContext,
  merchantId: string,
  filter: { all: boolean; limit: number },
): Promise<ApprovalView[]> {
  const tx = ctx.store;
  const requests = await listApprovalRequests(tx, merchantId, { pendingOnly: !filter.all, limit: filter.limit });
  const decisions = await approvalDecisions(
    tx,
    requests.map((r) => r.requestKey),
  );
  const views: ApprovalView[] = [];
  for (const r of requests) views.push(await approvalView(tx, r, decisions.get(r.requestKey) ?? []));
  return views;
}

async function approvalView(
  tx: Tx,
  r: ApprovalRequest,
  decisions: { userId: string; decision: "approve" | "reject"; createdAt: string }[],
): Promise<ApprovalView> {
  const payout = await findPayout(tx, r.requestKey);
  assert(payout !== null, `approval request ${r.requestKey} has its payout`);
  const currency = await findCurrency(tx, payout.currency);
  assert(currency !== null, `payout ${r.requestKey} has its currency`);
  return {
    requestId: r.requestKey,
    operation: payout.operation,
    currency: currency.ticker,
    amount: formatAmount(payout.amountMinor, currency.decimals),
    destination: payout.destination,
    reason: r.reason,
    approvalsRequired: r.approvalsRequired,
    initiatorUserId: r.initiatorUserId,
    state: r.state,
    decisions: decisions.map((d) => ({ userId: d.userId, decision: d.decision, at: d.createdAt })),
    createdAt: r.createdAt,
    decidedAt: r.decidedAt,
  };
}

export type DecisionRefusal =
  | "approval_not_found"
  | "approval_closed"
  | "initiator_cannot_approve"
  | "approval_already_decided";

/** Processor status of a payout its approvers rejected (its public status is `failed`). */
export const REJECTED_STATUS = "rejected_by_approver";

/**
 * One approver's decision on a payout waiting for approvals, exactly once: under the approval
 * request's row (PostgreSQL FOR UPDATE; SQLite serializes), so parallel clicks take turns. The
 * initiator never counts; each approver decides once. Enough approvals release the payout to its
 * rail (once); one rejection fails it and credits the held money back (once).
 */
export function decidePayoutApproval(
  ctx: ServiceContext,
  who: { merchantId: string; userId: string },
  requestId: string,
  decision: "approve" | "reject",
  alsoInTx?: (tx: Tx, view: ApprovalView) => Promise<unknown>,
): Promise<Outcome<ApprovalView, DecisionRefusal>> {
  const requestKey = requestId.toLowerCase();
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const request = await findApprovalRequest(tx, requestKey, true);
      if (!request || request.merchantId !== who.merchantId) {
        refuse("approval_not_found", "Your account has no payout awaiting approval with this id.", "/", null);
      }
      if (request.state !== "pending")
        refuse("approval_closed", `This payout was already ${request.state}.`, "/", null);
      if (request.initiatorUserId === who.userId) {
        refuse("initiator_cannot_approve", "The user who made a payout never approves or rejects it.", "/", null);
      }
      const now = nowIso();
      const inserted = await insertApprovalDecision(tx, requestKey, { userId: who.userId, decision, createdAt: now });
      if (!inserted) refuse("approval_already_decided", "You already decided on this payout.", "/", null);
      const decisions = (await approvalDecisions(tx, [requestKey])).get(requestKey) ?? [];
      const outcome = approvalOutcome(
        request.approvalsRequired,
        decisions.map((d) => d.decision),
      );
      if (outcome !== "pending") await closePayout(ctx, tx, request, outcome, now);
      const closed = await findApprovalRequest(tx, requestKey);
      assert(closed !== null, `approval request ${requestKey} exists`);
      const view = await approvalView(tx, closed, decisions);
      await alsoInTx?.(tx, view);
      return view;
    }),
  );
}

async function closePayout(
  ctx: ServiceContext,
  tx: Tx,
  request: ApprovalRequest,
  outcome: "approved" | "rejected",
  now: string,
): Promise<void> {
  await closeApprovalRequest(tx, request.requestKey, outcome, now);
  if (outcome === "approved") {
    const released = await releaseApprovedPayout(tx, request.requestKey, now);
    assert(released, `payout ${request.requestKey} awaits approval while its request is pending`);
    return;
  }
  const report = { outcome: "failed" as const, processorStatus: REJECTED_STATUS, processorTxId: null };
  const settled = await settlePayout(tx, request.requestKey, report, now, ctx.config.publicBaseUrl, {
    state: "awaiting_approval",
  });
  assert(settled.ok, `payout ${request.requestKey} awaits approval while its request is pending`);
  await recordApprovalEvent(tx, settled.value, "rejected", now);
}
