// Dashboard refunds (product §14): list (status, dates, keyset pages), detail with the payout, and the refund of a completed invoice (owners, step-up) through RefundCrypto's and RefundFiat's own rules.
import type { FastifyReply, FastifyRequest } from "fastify";
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { type RefundBodyFacts, RefundCryptoBody, RefundFiatBody, refundOnce } from "../../app/createRefund.ts";
import { formatAmount } from "../../domain/money.ts";
import { assert } from "../../domain/result.ts";
import { findCurrency } from "../../store/currencies.ts";
import { setApprovalInitiator } from "../../store/payoutPolicies.ts";
import { findRefundViewForMerchant, type InvoiceRefundView, listRefunds } from "../../store/refunds.ts";
import type { Tx } from "../../store/store.ts";
import { listAnswer, listProblem, listQuery, PayoutRequestStatus, pageWindow } from "../lists.ts";
import { publicRefundRequest, RefundResponse } from "../payoutViews.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { answerVerdict } from "../signed.ts";
import { dashboardRequest, explorerLinks, RequestIdField, security, tags } from "./moneyCommon.ts";
import { type DashboardScope, requireRole, requireStepUp } from "./session.ts";

export const DASHBOARD_REFUND_CRYPTO_ROUTE = "/dashboard/v1/refunds/crypto";
export const DASHBOARD_REFUND_FIAT_ROUTE = "/dashboard/v1/refunds/fiat";

const DashboardRefund = Type.Object(
  {
    id: Type.String({ description: "The request id, as first accepted" }),
    invoiceId: Type.String(),
    type: Type.Union([Type.Literal("crypto"), Type.Literal("fiat")]),
    currency: Type.String(),
    network: Type.String(),
    amount: Type.String(),
    debitCurrency: Type.String({ description: "The balance debited: the invoice's settlement currency" }),
    debitAmount: Type.String(),
    toAddress: Nullable(Type.String()),
    withdrawToSameAddress: Type.Boolean(),
    reason: Nullable(Type.String()),
    status: Type.Union([Type.Literal("processing"), Type.Literal("completed"), Type.Literal("failed")]),
    payoutState: Type.String(),
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

/** The dashboard's refund: the public object's facts, the balance it debited, its reason and the payout's own state. */
async function viewsOf(tx: Tx, rows: InvoiceRefundView[]): Promise<Static<typeof DashboardRefund>[]> {
  const explorerLink = await explorerLinks(tx);
  const views = [];
  for (const r of rows) {
    const currency = await findCurrency(tx, r.currency);
    const debit = await findCurrency(tx, r.debitCurrency);
    assert(currency !== null && debit !== null, `refund ${r.requestKey} has its currencies`);
    const pub = publicRefundRequest(r);
    views.push({
      id: pub.id,
      invoiceId: pub.invoice_id,
      type: pub.type,
      currency: pub.currency,
      network: currency.network,
      amount: pub.amount,
      debitCurrency: r.debitCurrency,
      debitAmount: formatAmount(r.debitMinor, debit.decimals),
      toAddress: pub.to_address,
      withdrawToSameAddress: pub.withdraw_to_same_address,
      reason: r.reason,
      status: pub.status,
      // A claim refund has no payout until its payer claims it (product §25).
      payoutState: r.payoutState ?? (r.status === "processing" ? "awaiting_claim" : "claim_expired"),
      payoutProcessorStatus: pub.payout_processor_status,
      payoutProcessorTxId: pub.payout_processor_tx_id,
      explorerUrl: explorerLink(currency.network, pub.payout_processor_tx_id),
      createdAt: pub.created_at,
      updatedAt: pub.updated_at,
    });
  }
  return views;
}

export function registerDashboardRefunds(api: App, ctx: ServiceContext, scope: DashboardScope) {
  registerDashboardRefundViews(api, ctx, scope);
  registerDashboardRefundActions(api, ctx, scope);
}

/** The merchant's refunds: the list and one refund. */
function registerDashboardRefundViews(api: App, ctx: ServiceContext, { session }: DashboardScope) {
  api.get(
    "/refunds",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListRefunds",
        tags,
        security,
        summary: "The merchant's refunds, newest first; filter by status and creation time, page with starting_after",
        querystring: listQuery({ status: Type.Optional(PayoutRequestStatus) }, "a refund"),
        response: {
          200: listAnswer(
            DashboardRefund,
            "Newest first; filter by status and creation time, page with starting_after",
          ),
          ...problems(400, 401),
        },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const page = await listRefunds(ctx.store, user.merchantId, {
        ...pageWindow(request.query),
        status: request.query.status,
      });
      if (!page.ok) throw listProblem(page.error, page.detail);
      const items = await viewsOf(ctx.store, page.value.data);
      return { data: items, has_more: page.value.hasMore };
    },
  );

  api.get(
    "/refunds/:id",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardGetRefund",
        summary: "A refund",
        tags,
        security,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
        response: { 200: DashboardRefund, ...problems(401, 404) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const found = await findRefundViewForMerchant(ctx.store, user.merchantId, request.params.id);
      if (!found) throw new Problem("refund_not_found", "Your account has no refund with this id.");
      const [view] = await viewsOf(ctx.store, [found]);
      return view;
    },
  );
}

/** A refund from the dashboard: owners, step-up, the form's request id, the signed operations' acceptance, audited. */
async function refund(
  ctx: ServiceContext,
  record: DashboardScope["record"],
  request: FastifyRequest,
  reply: FastifyReply,
  route: string,
  requestId: string,
  fields: Record<string, unknown>,
  facts: RefundBodyFacts,
): Promise<FastifyReply> {
  const { user } = requireRole(request, "moveMoney");
  requireStepUp(request);
  const idempotent = dashboardRequest(user.merchantId, route, requestId, fields);
  const outcome = await refundOnce(ctx, idempotent, facts, async (tx, answer) => {
    // Over the payout policy, the refund waits for approvers: its initiator is never one of them.
    await setApprovalInitiator(tx, idempotent.requestKey, user.id);
    const to = answer.request.to_address ? ` to ${answer.request.to_address}` : "";
    await record(
      request,
      tx,
      `refund.${facts.type}`,
      `invoice ${facts.invoiceId}: ${answer.request.amount} ${answer.request.currency}${to} (${answer.request.id})`,
    );
  });
  return answerVerdict(reply, valueOrProblem(outcome));
}

/** RefundCrypto and RefundFiat from the dashboard, through one helper. */
function registerDashboardRefundActions(api: App, ctx: ServiceContext, { session, record }: DashboardScope) {
  api.post(
    "/refunds/crypto",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardRefundCrypto",
        tags,
        security,
        summary: "Refund a completed invoice in its crypto currency, to an address or to its sender (owners; step-up)",
        body: Type.Object(
          { requestId: RequestIdField, ...RefundCryptoBody.properties },
          { additionalProperties: false },
        ),
        response: { 200: RefundResponse, ...problems(400, 401, 403, 409, 415) },
      },
    },
    async (request, reply) => {
      const { requestId, ...fields } = request.body;
      return refund(ctx, record, request, reply, DASHBOARD_REFUND_CRYPTO_ROUTE, requestId, fields, {
        type: "crypto",
        invoiceId: fields.invoiceId,
        reason: fields.reason,
        destination: { address: fields.address, withdrawToSameAddress: fields.withdrawToSameAddress },
      });
    },
  );

  api.post(
    "/refunds/fiat",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardRefundFiat",
        tags,
        security,
        summary: "Refund a completed invoice that settles in fiat (owners; step-up)",
        body: Type.Object({ requestId: RequestIdField, ...RefundFiatBody.properties }, { additionalProperties: false }),
        response: { 200: RefundResponse, ...problems(400, 401, 403, 409, 415) },
      },
    },
    async (request, reply) => {
      const { requestId, ...fields } = request.body;
      return refund(ctx, record, request, reply, DASHBOARD_REFUND_FIAT_ROUTE, requestId, fields, {
        type: "fiat",
        invoiceId: fields.invoiceId,
        reason: fields.reason,
        destination: null,
      });
    },
  );
}
