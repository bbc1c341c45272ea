// Operator API: payouts, those in need of reconciliation in particular, and recording an outcome the operator established.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { recordPayoutOutcome } from "../../app/recordPayoutOutcome.ts";
import { formatAmount } from "../../domain/money.ts";
import { checkRequestId } from "../../domain/signing.ts";
import { listCurrencies } from "../../store/currencies.ts";
import { type HotTransaction, hotTransactionsOf } from "../../store/hotTransactions.ts";
import { findPayout, listPayouts, type Payout } from "../../store/payouts.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { type ChainView, chainView, checkOutcomeAgainstChain } from "./payoutChain.ts";

/** Every route here: the operator's bearer token. */
const security = [{ adminToken: [] }];

const PayoutStateSchema = Type.Union([
  Type.Literal("awaiting_approval"),
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

const OnChain = Type.Object(
  {
    receipt: Nullable(Type.String({ description: "success or reverted; null while not mined" })),
    blockNumber: Nullable(Type.String()),
    confirmations: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

const AdminPayoutTransaction = Type.Object(
  {
    hash: Type.String(),
    network: Type.String(),
    nonce: Type.Integer(),
    state: Type.String({ description: "signed, broadcast, dropped, mined, confirmed, reverted or replaced" }),
    replacesHash: Nullable(Type.String()),
    raw: Type.String({ description: "The signed raw transaction, exactly as broadcast" }),
    gasLimit: Type.String(),
    maxFeePerGas: Type.String({ description: "wei" }),
    maxPriorityFeePerGas: Type.String({ description: "wei" }),
    broadcastAt: Nullable(Type.String()),
    broadcastCount: Type.Integer(),
    lastError: Nullable(Type.String()),
    blockNumber: Nullable(Type.String()),
    receiptStatus: Nullable(Type.String()),
    createdAt: Type.String(),
    onChain: Nullable(OnChain),
  },
  { additionalProperties: false },
);

const AdminPayoutDetail = Type.Object(
  {
    ...AdminPayout.properties,
    transactions: Type.Array(AdminPayoutTransaction),
    chain: Nullable(
      Type.Object(
        {
          network: Type.String(),
          hotWalletLatestNonce: Nullable(Type.Integer()),
          nodeError: Nullable(Type.String()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

function adminTransaction(t: HotTransaction, all: readonly HotTransaction[], view: ChainView | null) {
  return {
    hash: t.hash,
    network: t.network,
    nonce: t.nonce,
    state: t.state,
    replacesHash: all.find((other) => other.id === t.replacesId)?.hash ?? null,
    raw: t.raw,
    gasLimit: t.gasLimit.toString(),
    maxFeePerGas: t.fees.maxFeePerGas.toString(),
    maxPriorityFeePerGas: t.fees.maxPriorityFeePerGas.toString(),
    broadcastAt: t.broadcastAt,
    broadcastCount: t.broadcastCount,
    lastError: t.lastError,
    blockNumber: t.blockNumber === null ? null : t.blockNumber.toString(),
    receiptStatus: t.receiptStatus,
    createdAt: t.createdAt,
    onChain: view?.transactions.get(t.hash) ?? null,
  };
}

const notFound = () => new Problem("payout_not_found", "No payout has this request id.");

export function registerAdminPayouts(app: App, ctx: ServiceContext): void {
  registerAdminListPayouts(app, ctx);
  registerAdminGetPayout(app, ctx);
  registerAdminRecordPayoutOutcome(app, ctx);
}

function registerAdminListPayouts(app: App, ctx: ServiceContext): void {
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
}

function registerAdminGetPayout(app: App, ctx: ServiceContext): void {
  app.get(
    "/payouts/:requestId",
    {
      schema: {
        operationId: "AdminGetPayout",
        tags: ["operator"],
        security,
        summary: "A payout with its stored transactions (live payouts) and what the network's node says about each now",
        params: Type.Object({ requestId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: { 200: AdminPayoutDetail, ...problems(401, 404) },
      },
    },
    async (request) => {
      const key = checkRequestId(request.params.requestId);
      if (!key.ok) throw notFound();
      const payout = await findPayout(ctx.store, key.value);
      if (!payout) throw notFound();
      const [txs, currencies] = await Promise.all([
        hotTransactionsOf(ctx.store, "payout", key.value),
        listCurrencies(ctx.store),
      ]);
      const view = await chainView(ctx, txs);
      return {
        ...adminPayout(payout, new Map(currencies.map((c) => [c.ticker, c.decimals]))),
        transactions: txs.map((t) => adminTransaction(t, txs, view)),
        chain: view
          ? { network: view.network, hotWalletLatestNonce: view.latestNonce, nodeError: view.nodeError }
          : null,
      };
    },
  );
}

function registerAdminRecordPayoutOutcome(app: App, ctx: ServiceContext): void {
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
        response: { 200: AdminPayout, ...problems(400, 401, 404, 409, 415, 503) },
      },
    },
    async (request) => {
      const key = checkRequestId(request.params.requestId);
      if (!key.ok) throw notFound();
      const { status, txId } = request.body;
      // A live payout's outcome must agree with the chain: its stored transactions are asked about first.
      const txs = await hotTransactionsOf(ctx.store, "payout", key.value);
      const chainTxId = await checkOutcomeAgainstChain(ctx, txs, status, txId);
      const settled = valueOrProblem(await recordPayoutOutcome(ctx, key.value, request.body, chainTxId));
      const currencies = await listCurrencies(ctx.store);
      return adminPayout(settled, new Map(currencies.map((c) => [c.ticker, c.decimals])));
    },
  );
}
