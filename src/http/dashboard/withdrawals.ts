// Dashboard withdrawals (product §14): list (status, dates, keyset pages), detail with the payout, and the withdraw form (owners, step-up), through CreateWithdrawal's own rules.

import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { CreateWithdrawalBody, performWithdrawal, usableMethodId } from "../../app/createWithdrawal.ts";
import { formatAmount } from "../../domain/money.ts";
import { assert } from "../../domain/result.ts";
import { checkWithdrawal, REFUSAL_POINTER, withdrawalPricing } from "../../domain/withdrawal.ts";
import { findCurrency } from "../../store/currencies.ts";
import { merchantBalance } from "../../store/ledgerLines.ts";
import { findMerchant, findWithdrawalMethod, listWithdrawalMethods } from "../../store/merchants.ts";
import { setApprovalInitiator } from "../../store/payoutPolicies.ts";
import type { Tx } from "../../store/store.ts";
import { nowIso } from "../../store/store.ts";
import { findWithdrawalViewForMerchant, listWithdrawals, type WithdrawalView } from "../../store/withdrawals.ts";
import { listAnswer, listProblem, listQuery, PayoutRequestStatus, pageWindow } from "../lists.ts";
import { publicWithdrawalRequest, WithdrawalResponse } from "../payoutViews.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { answerVerdict } from "../signed.ts";
import { dashboardRequest, explorerLinks, RequestIdField, security, tags } from "./moneyCommon.ts";
import { type DashboardScope, requireRole, requireStepUp } from "./session.ts";

export const DASHBOARD_WITHDRAW_ROUTE = "/dashboard/v1/withdrawals";

const Status = Type.Union([Type.Literal("processing"), Type.Literal("completed"), Type.Literal("failed")]);

const DashboardWithdrawal = Type.Object(
  {
    id: Type.String({ description: "The request id, as first accepted" }),
    currency: Type.String(),
    network: Type.String(),
    amount: Type.String(),
    withdrawalMethodId: Type.Integer(),
    methodLabel: Nullable(Type.String()),
    destination: Type.String(),
    status: Status,
    payoutState: Type.String({ description: "The payout's own state: queued, sending, sent, needs_reconciliation, …" }),
    payoutProcessorStatus: Nullable(Type.String()),
    payoutProcessorTxId: Nullable(Type.String()),
    explorerUrl: Nullable(
      Type.String({ description: "The transaction on the network's explorer, when the operator configured one" }),
    ),
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { additionalProperties: false },
);

/** The dashboard's withdrawal: the public object's facts, the method it went to and the payout's own state. */
async function viewsOf(
  tx: Tx,
  merchantId: string,
  rows: WithdrawalView[],
): Promise<Static<typeof DashboardWithdrawal>[]> {
  // At most WITHDRAWAL_METHODS_PER_MERCHANT methods: one read for the page.
  const methods = new Map((await listWithdrawalMethods(tx, merchantId)).map((m) => [m.id, m]));
  const explorerLink = await explorerLinks(tx);
  const views = [];
  for (const w of rows) {
    const method = methods.get(w.withdrawalMethodId);
    const currency = await findCurrency(tx, w.currency);
    assert(method !== undefined && currency !== null, `withdrawal ${w.requestKey} has its method and currency`);
    const pub = publicWithdrawalRequest(w);
    views.push({
      id: pub.id,
      currency: pub.currency,
      network: currency.network,
      amount: pub.amount,
      withdrawalMethodId: pub.withdrawal_method_id,
      methodLabel: method.label,
      destination: method.address,
      status: pub.status,
      payoutState: w.payoutState,
      payoutProcessorStatus: pub.payout_processor_status,
      payoutProcessorTxId: pub.payout_processor_tx_id,
      explorerUrl: explorerLink(currency.network, pub.payout_processor_tx_id),
      createdAt: pub.created_at,
      updatedAt: pub.updated_at,
    });
  }
  return views;
}

const WithdrawalReview = Type.Object(
  {
    currency: Type.String(),
    network: Type.String(),
    amount: Type.String({ description: "What the balance is debited" }),
    fee: Type.String({ description: "What the service charges for the withdrawal" }),
    receiveAmount: Type.String({ description: "What the withdrawal method receives" }),
    balance: Type.String({ description: "The available balance now" }),
    balanceAfter: Type.String({ description: "The available balance once this withdrawal is accepted" }),
    withdrawalMethodId: Type.Integer(),
    methodLabel: Nullable(Type.String()),
    destination: Type.String(),
  },
  { additionalProperties: false },
);

/**
 * The withdraw form's review: CreateWithdrawal's rules and the balance, checked now, and what the
 * withdrawal would debit, charge and deliver. It reads only; the withdrawal itself checks again.
 */
async function reviewWithdrawal(
  tx: Tx,
  merchantId: string,
  body: Static<typeof CreateWithdrawalBody>,
): Promise<Static<typeof WithdrawalReview>> {
  const id = body.withdrawalMethodId;
  // An id no method can have (PostgreSQL `integer`) must not reach a query, as in CreateWithdrawal.
  const method = usableMethodId(id) ? await findWithdrawalMethod(tx, id) : null;
  const merchant = await findMerchant(tx, merchantId);
  assert(merchant !== null, "a signed-in user's merchant exists");
  const currency = await findCurrency(tx, body.currency);
  const decision = checkWithdrawal({
    merchantId,
    merchantStatus: merchant.status,
    method,
    now: nowIso(),
    requestedCurrency: body.currency,
    currency,
    amount: body.amount,
  });
  if (!decision.ok) {
    const detail = decision.detail ?? "The withdrawal would be refused.";
    throw new Problem(decision.error, detail, [{ pointer: REFUSAL_POINTER[decision.error], detail }]);
  }
  assert(method !== null && currency !== null, "an accepted withdrawal has its method and currency");
  const pricing = withdrawalPricing(decision.value.amountMinor);
  const balance = await merchantBalance(tx, merchantId, currency.ticker);
  if (balance < pricing.debitMinor) {
    const detail = `The available ${currency.ticker} balance does not cover this withdrawal.`;
    throw new Problem("insufficient_balance", detail, [{ pointer: "/amount", detail }]);
  }
  const money = (minor: bigint) => formatAmount(minor, currency.decimals);
  return {
    currency: currency.ticker,
    network: currency.network,
    amount: money(pricing.debitMinor),
    fee: money(pricing.feeMinor),
    receiveAmount: money(pricing.receiveMinor),
    balance: money(balance),
    balanceAfter: money(balance - pricing.debitMinor),
    withdrawalMethodId: method.id,
    methodLabel: method.label,
    destination: method.address,
  };
}

export function registerDashboardWithdrawals(api: App, ctx: ServiceContext, scope: DashboardScope) {
  registerDashboardReviewWithdrawal(api, ctx, scope);
  registerDashboardListWithdrawals(api, ctx, scope);
  registerDashboardGetWithdrawal(api, ctx, scope);
  registerDashboardWithdraw(api, ctx, scope);
}

function registerDashboardReviewWithdrawal(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.post(
    "/withdrawals/review",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardReviewWithdrawal",
        tags,
        security,
        summary:
          "The withdraw form's review step (owners): CreateWithdrawal's rules and the balance checked now, with the fee and the amount received; sends nothing",
        body: CreateWithdrawalBody,
        response: { 200: WithdrawalReview, ...problems(400, 401, 403, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "moveMoney");
      return reviewWithdrawal(ctx.store, user.merchantId, request.body);
    },
  );
}

function registerDashboardListWithdrawals(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/withdrawals",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListWithdrawals",
        tags,
        security,
        summary:
          "The merchant's withdrawals, newest first; filter by status and creation time, page with starting_after",
        querystring: listQuery({ status: Type.Optional(PayoutRequestStatus) }, "a withdrawal"),
        response: {
          200: listAnswer(
            DashboardWithdrawal,
            "Newest first; filter by status and creation time, page with starting_after",
          ),
          ...problems(400, 401),
        },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const page = await listWithdrawals(ctx.store, user.merchantId, {
        ...pageWindow(request.query),
        status: request.query.status,
      });
      if (!page.ok) throw listProblem(page.error, page.detail);
      const items = await viewsOf(ctx.store, user.merchantId, page.value.data);
      return { data: items, has_more: page.value.hasMore };
    },
  );
}

function registerDashboardGetWithdrawal(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/withdrawals/:id",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardGetWithdrawal",
        summary: "A withdrawal",
        tags,
        security,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        response: { 200: DashboardWithdrawal, ...problems(401, 404) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const found = await findWithdrawalViewForMerchant(ctx.store, user.merchantId, request.params.id);
      if (!found) throw new Problem("withdrawal_not_found", "Your account has no withdrawal with this id.");
      const [view] = await viewsOf(ctx.store, user.merchantId, [found]);
      return view;
    },
  );
}

function registerDashboardWithdraw(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/withdrawals",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardWithdraw",
        tags,
        security,
        summary:
          "Withdraw to a withdrawal method (owners; needs a step-up). CreateWithdrawal's rules, ledger and payout; the form's requestId makes a repeat the same withdrawal",
        body: Type.Object(
          { requestId: RequestIdField, ...CreateWithdrawalBody.properties },
          { additionalProperties: false },
        ),
        response: { 200: WithdrawalResponse, ...problems(400, 401, 403, 409, 415) },
      },
    },
    async (request, reply) => {
      const { user } = requireRole(request, "moveMoney");
      requireStepUp(request);
      const { requestId, ...fields } = request.body;
      const idempotent = dashboardRequest(user.merchantId, DASHBOARD_WITHDRAW_ROUTE, requestId, fields);
      const outcome = await performWithdrawal(ctx, idempotent, fields, async (tx, answer) => {
        // Over the payout policy, the withdrawal waits for approvers: its initiator is never one of them.
        await setApprovalInitiator(tx, idempotent.requestKey, user.id);
        await record(
          request,
          tx,
          "withdrawal.create",
          `${answer.request.amount} ${answer.request.currency} to method #${answer.request.withdrawal_method_id} (${answer.request.id})`,
        );
      });
      return answerVerdict(reply, valueOrProblem(outcome));
    },
  );
}
