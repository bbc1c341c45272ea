// Operator API: payouts, those in need of reconciliation in particular, and recording an outcome the operator established.
import { Type } from "typebox";
import { formatAmount } from "../../domain/money.ts";
import { checkRequestId } from "../../domain/signing.ts";
import { listCurrencies } from "../../store/currencies.ts";
import { listPayouts, type Payout, settlePayout } from "../../store/payouts.ts";
import { nowIso } from "../../store/store.ts";
import type { App } from "../app.ts";
import type { ServiceContext } from "../context.ts";
import { Problem } from "../problem.ts";
import { Nullable, problems } from "../schemas.ts";

const PayoutStateSchema = Type.Union([
  Type.Literal("queued"),
  Type.Literal("sending"),
  Type.Literal("sent"),
  Type.Literal("needs_reconciliation"),
  Type.Literal("completed"),
  Type.Literal("failed"),
]);

const AdminPayout = Type.Object(
  {
    requestId: Type.String(),
    operation: Type.String(),
    merchantId: Type.String(),
    currency: Type.String(),
    amount: Type.String(),
    destination: Type.String(),
    state: PayoutStateSchema,
    processor: Nullable(Type.String()),
    processorStatus: Nullable(Type.String()),
    processorTxId: Nullable(Type.String()),
    attempts: Type.Integer(),
    lastError: Nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
    updatedAt: Type.String({ format: "date-time" }),
    stateChangedAt: Type.String({ format: "date-time" }),
    settledAt: Nullable(Type.String({ format: "date-time" })),
  },
  { additionalProperties: false },
);

function adminPayout(p: Payout, decimals: Map<string, number>) {
  return {
    requestId: p.requestKey,
    operation: p.operation,
    merchantId: p.merchantId,
    currency: p.currency,
    amount: formatAmount(p.amountMinor, decimals.get(p.currency) ?? 0),
    destination: p.destination,
    state: p.state,
    processor: p.processor,
    processorStatus: p.processorStatus,
    processorTxId: p.processorTxId,
    attempts: p.attempts,
    lastError: p.lastError,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
    stateChangedAt: p.stateChangedAt,
    settledAt: p.settledAt,
  };
}

const notFound = () => new Problem("payout_not_found", "No payout has this request id.");

export function registerAdminPayouts(app: App, ctx: ServiceContext): void {
  const security = [{ adminToken: [] }];
  app.get(
    "/payouts",
    {
      schema: {
        operationId: "AdminListPayouts",
        tags: ["operator"],
        security,
        summary: "Payouts, oldest first; ?state=needs_reconciliation lists those an operator must resolve",
        querystring: Type.Object(
          {
            state: Type.Optional(PayoutStateSchema),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Array(AdminPayout), ...problems(400, 401) },
      },
    },
    async (request) => {
      const { state, limit } = request.query;
      const [payouts, currencies] = await Promise.all([
        listPayouts(ctx.store, { ...(state ? { state } : {}), limit: limit ?? 100 }),
        listCurrencies(ctx.store),
      ]);
      const decimals = new Map(currencies.map((c) => [c.ticker, c.decimals]));
      return payouts.map((p) => adminPayout(p, decimals));
    },
  );

  app.post(
    "/payouts/:requestId/outcome",
    {
      schema: {
        operationId: "AdminRecordPayoutOutcome",
        tags: ["operator"],
        security,
        summary: "Record the outcome of a payout the operator established with the processor (reconciliation)",
        params: Type.Object({ requestId: Type.String({ minLength: 1, maxLength: 100 }) }),
        body: Type.Object(
          {
            status: Type.Union([Type.Literal("completed"), Type.Literal("failed")]),
            txId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: AdminPayout, ...problems(400, 401, 404, 409, 415) },
      },
    },
    async (request) => {
      const key = checkRequestId(request.params.requestId);
      if (!key.ok) throw notFound();
      const { status, txId } = request.body;
      const settled = await ctx.store.transaction((tx) =>
        settlePayout(
          tx,
          key.value,
          { outcome: status, processorStatus: `operator_${status}`, processorTxId: txId ?? null },
          nowIso(),
          ctx.config.publicBaseUrl,
        ),
      );
      if (!settled.ok) {
        if (settled.error === "payout_not_found") throw notFound();
        throw new Problem("payout_already_settled", "This payout was already settled; its outcome cannot change.");
      }
      const currencies = await listCurrencies(ctx.store);
      return adminPayout(settled.value, new Map(currencies.map((c) => [c.ticker, c.decimals])));
    },
  );
}
