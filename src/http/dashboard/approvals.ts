// Dashboard payout approvals and policies (product §31): the queue of payouts waiting for approvals, approve and reject (approvers, step-up), and the owner's policy editor.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import {
  decidePayoutApproval,
  listApprovals,
  PayoutPolicyBody,
  payoutPolicies,
  setPayoutPolicy,
} from "../../app/payoutApprovals.ts";
import { PayoutPolicySchema } from "../payoutPolicyShapes.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { security, tags } from "./moneyCommon.ts";
import { type DashboardScope, requireRole, requireStepUp } from "./session.ts";

const Decision = Type.Union([Type.Literal("approve"), Type.Literal("reject")]);

export const ApprovalSchema = Type.Object(
  {
    requestId: Type.String({ description: "The withdrawal's or refund's request id (lowercase)" }),
    operation: Type.Union([Type.Literal("withdrawal"), Type.Literal("refund")]),
    currency: Type.String(),
    amount: Type.String(),
    destination: Type.String(),
    reason: Type.Union([Type.Literal("per_payout_limit"), Type.Literal("daily_limit")]),
    approvalsRequired: Type.Integer(),
    initiatorUserId: Nullable(Type.String({ description: "The dashboard user who made it; null: an API key" })),
    state: Type.Union([Type.Literal("pending"), Type.Literal("approved"), Type.Literal("rejected")]),
    decisions: Type.Array(
      Type.Object({ userId: Type.String(), decision: Decision, at: Type.String() }, { additionalProperties: false }),
    ),
    createdAt: Type.String(),
    decidedAt: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

const RequestIdParams = Type.Object(
  { requestId: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

export function registerDashboardApprovals(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  registerListApprovals(api, ctx, scope);
  registerDecide(api, ctx, scope, "approve");
  registerDecide(api, ctx, scope, "reject");
  registerPolicies(api, ctx, scope);
}

function registerListApprovals(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/approvals",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListApprovals",
        tags,
        security,
        summary: "Payouts waiting for approvals, newest first (?all=true: the decided ones too)",
        querystring: Type.Object(
          { all: Type.Optional(Type.Boolean()), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Array(ApprovalSchema), ...problems(400, 401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      return listApprovals(ctx, user.merchantId, { all: request.query.all ?? false, limit: request.query.limit ?? 50 });
    },
  );
}

function registerDecide(
  api: App,
  ctx: ServiceContext,
  { session, record }: DashboardScope,
  decision: "approve" | "reject",
) {
  api.post(
    `/approvals/:requestId/${decision}`,
    {
      onRequest: session,
      schema: {
        operationId: decision === "approve" ? "DashboardApprovePayout" : "DashboardRejectPayout",
        tags,
        security,
        summary:
          decision === "approve"
            ? "Approve a payout waiting for approvals (approvers and owners, not its initiator; needs a step-up); the last approval needed sends it"
            : "Reject a payout waiting for approvals (approvers and owners, not its initiator; needs a step-up): it fails and its money is credited back",
        params: RequestIdParams,
        response: { 200: ApprovalSchema, ...problems(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "approvePayouts");
      requireStepUp(request);
      const who = { merchantId: user.merchantId, userId: user.id };
      const outcome = await decidePayoutApproval(ctx, who, request.params.requestId, decision, (tx, view) =>
        record(
          request,
          tx,
          `payout.${decision}`,
          `${view.operation} ${view.requestId}: ${view.amount} ${view.currency} (${view.state})`,
        ),
      );
      return valueOrProblem(outcome);
    },
  );
}

function registerPolicies(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.get(
    "/payout-policies",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListPayoutPolicies",
        tags,
        security,
        summary: "The payout policies, one per currency",
        response: { 200: Type.Array(PayoutPolicySchema), ...problems(401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      return payoutPolicies(ctx, user.merchantId);
    },
  );
  api.put(
    "/payout-policies/:currency",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardSetPayoutPolicy",
        tags,
        security,
        summary:
          "Set the payout policy of a currency (owners; needs a step-up): a tightening applies at once, a loosening after the cooling-off",
        params: Type.Object(
          { currency: Type.String({ minLength: 1, maxLength: 40 }) },
          { additionalProperties: false },
        ),
        body: PayoutPolicyBody,
        response: { 200: PayoutPolicySchema, ...problems(400, 401, 403, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "managePayoutPolicies");
      requireStepUp(request);
      const target = { merchantId: user.merchantId, currency: request.params.currency };
      const coolingOff = ctx.config.withdrawalMethodCoolingOffMs;
      const outcome = await setPayoutPolicy(ctx, target, request.body, coolingOff, (tx, view) =>
        record(request, tx, "payout_policy.set", policyTarget(view)),
      );
      return valueOrProblem(outcome);
    },
  );
}

function policyTarget(view: {
  currency: string;
  perPayoutLimit: string | null;
  dailyLimit: string | null;
  approvalsRequired: number;
  pending: { effectiveAt: string } | null;
}): string {
  const limits = `per payout ${view.perPayoutLimit ?? "none"}, daily ${view.dailyLimit ?? "none"}, approvals ${view.approvalsRequired}`;
  return `${view.currency}: ${limits}${view.pending ? `; looser limits from ${view.pending.effectiveAt}` : ""}`;
}
