// Operator API: flush deposits (product §24, issue 36): GET /flush-deposits?state=failed lists those whose flush failed for good, POST /flush-deposits/{paymentId}/retry puts one back to waiting.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { retryFlushDeposit } from "../../app/flushDeposits.ts";
import { formatAmount } from "../../domain/money.ts";
import { listCurrencies } from "../../store/currencies.ts";
import { type FlushDepositView, listFlushDeposits } from "../../store/flushes.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

/** flush_deposit_states (migration 032). */
const FlushDepositStateSchema = Type.Union([
  Type.Literal("waiting"),
  Type.Literal("flushing"),
  Type.Literal("flushed"),
  Type.Literal("failed"),
]);

export const FlushDepositSchema = Type.Object(
  {
    paymentId: Type.String({ description: "The invoice payment, or the customer's deposit (depositId), flushed" }),
    invoiceId: Type.Union([Type.String(), Type.Null()], { description: "null: a customer's deposit (product §30)" }),
    depositId: Type.Union([Type.String(), Type.Null()], {
      description: "The customer's deposit flushed; null: an invoice payment",
    }),
    network: Type.String(),
    depositAddress: Type.String({ description: "The forwarder's address" }),
    factory: Type.String(),
    currency: Type.String({ description: "The catalog entry's key" }),
    token: Type.Union([Type.String(), Type.Null()], { description: "The token contract; null: the native coin" }),
    amount: Type.String({ description: "What the payment brought, in whole units of that entry" }),
    state: FlushDepositStateSchema,
    flushId: Type.Union([Type.String(), Type.Null()], {
      description: "The flush carrying it (or the one it failed in)",
    }),
    outcome: Type.Union([Type.String(), Type.Null()], {
      description: "`Flushed` or `FlushFailed`, as the last mined flush logged it",
    }),
    attempts: Type.Integer({ description: "Flushes it came back from unmoved since queued or last retried" }),
    lastError: Type.Union([Type.String(), Type.Null()]),
    gasShareWei: Type.String({ description: "Flush gas it bore, in wei of the network's coin" }),
    nextAttemptAt: Type.String(),
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { additionalProperties: false },
);

export function registerAdminFlushDeposits(app: App, ctx: ServiceContext): void {
  registerList(app, ctx);
  registerRetry(app, ctx);
}

function registerList(app: App, ctx: ServiceContext): void {
  app.get(
    "/flush-deposits",
    {
      schema: {
        operationId: "AdminListFlushDeposits",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        summary:
          "Confirmed deposits at forwarder addresses in one state (?state=failed: those whose flush failed past its attempts, the operator's to retry), newest first",
        querystring: Type.Object(
          {
            state: FlushDepositStateSchema,
            network: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
            before: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
            limit: Type.Optional(Type.String({ pattern: "^(?:[1-9][0-9]?|100)$" })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object(
            {
              items: Type.Array(FlushDepositSchema),
              nextBefore: Type.Union([Type.String(), Type.Null()], { description: "`before` of the next page" }),
            },
            { additionalProperties: false },
          ),
          ...problems(400, 401),
        },
      },
    },
    async (request) => {
      const { state, network, before } = request.query;
      const limit = Number(request.query.limit ?? "50");
      const [rows, decimals] = await Promise.all([
        listFlushDeposits(ctx.store, { state, network, before }, limit),
        decimalsOf(ctx),
      ]);
      const last = rows.at(-1);
      return {
        items: rows.map((r) => flushDepositBody(r, decimals)),
        nextBefore: rows.length === limit && last ? last.id : null,
      };
    },
  );
}

function registerRetry(app: App, ctx: ServiceContext): void {
  app.post(
    "/flush-deposits/:paymentId/retry",
    {
      schema: {
        operationId: "AdminRetryFlushDeposit",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        summary: "Put a failed flush deposit back to waiting: the next flush of its network takes it",
        description:
          "For a deposit left `failed` after its attempts (the token refused to move it), once the cause is dealt with. Its attempts count afresh; the retry is recorded. Idempotent: a deposit already waiting is answered as it is. 409 flush_deposit_not_failed while it is in a flush or once flushed.",
        params: Type.Object({ paymentId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: FlushDepositSchema, ...problems(401, 404, 409) },
      },
    },
    async (request) => {
      const deposit = valueOrProblem(await retryFlushDeposit(ctx, request.params.paymentId, "operator"));
      return flushDepositBody(deposit, await decimalsOf(ctx));
    },
  );
}

async function decimalsOf(ctx: ServiceContext): Promise<Map<string, number>> {
  return new Map((await listCurrencies(ctx.store)).map((c) => [c.ticker, c.decimals]));
}

/** A flush deposit as the operator API answers it; the amount in whole units of its entry (in minor units if the entry is gone). */
function flushDepositBody(d: FlushDepositView, decimals: Map<string, number>): Static<typeof FlushDepositSchema> {
  const places = decimals.get(d.currency);
  return {
    paymentId: d.paymentId,
    invoiceId: d.invoiceId,
    depositId: d.depositId,
    network: d.network,
    depositAddress: d.depositAddress,
    factory: d.factory,
    currency: d.currency,
    token: d.token,
    amount: places === undefined ? d.amountMinor.toString() : formatAmount(d.amountMinor, places),
    state: d.state,
    flushId: d.flushId,
    outcome: d.outcome,
    attempts: d.attempts,
    lastError: d.lastError,
    gasShareWei: d.gasShare.toString(),
    nextAttemptAt: d.nextAttemptAt,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}
