// Merchant API extensions (product §15): reads of withdrawals and refunds, and newest-first lists of invoices, withdrawals, refunds and events.
import { type Static, Type } from "typebox";
import { balancesOf } from "../../app/balances.ts";
import type { ServiceContext } from "../../app/context.ts";
import { quoteView } from "../../app/quotes.ts";
import { EVENT_TYPES } from "../../domain/callbackEvent.ts";
import { listEvents } from "../../store/events.ts";
import { findInvoiceForMerchant, listInvoices } from "../../store/invoices.ts";
import { findRefundViewForMerchant, listRefunds } from "../../store/refunds.ts";
import { findWithdrawalViewForMerchant, listWithdrawals } from "../../store/withdrawals.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import {
  InvoiceStatusSchema,
  Literals,
  listAnswer,
  listProblem,
  listQuery,
  PayoutRequestStatus,
  pageWindow,
} from "../lists.ts";
import {
  PublicRefundRequest,
  PublicWithdrawalRequest,
  publicRefundRequest,
  publicWithdrawalRequest,
  RefundResponse,
  WithdrawalResponse,
} from "../payoutViews.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { QuoteRateSchema } from "../shapes.ts";

/** Every route here: the merchant's API key. */
const security = [{ apiKey: [] }];

export const EXTENSIONS_TAG = "extensions";
const tags = [EXTENSIONS_TAG];

/** An event exactly as its callback body: the OpenAPI description of the bytes GET /events lists. */
export const EventSchema = Type.Object(
  {
    type: Literals(EVENT_TYPES),
    id: Type.String({ description: "evt_ followed by 32 hex digits; the webhook-id of its callback" }),
    created_at: Type.String({ format: "date-time", description: "When the change happened" }),
    data: Type.Union([
      Type.Object({ invoice: InvoiceSchema }, { additionalProperties: false, description: "invoice.<status>" }),
      Type.Object(
        { request: PublicWithdrawalRequest },
        { additionalProperties: false, description: "withdrawal.completed, withdrawal.failed" },
      ),
      Type.Object(
        { request: PublicRefundRequest },
        { additionalProperties: false, description: "refund.completed, refund.failed" },
      ),
    ]),
  },
  { additionalProperties: false, description: "Exactly the body of its callback (docs/callbacks.md)" },
);

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) });

export const PaymentValueSchema = Type.Object(
  {
    id: Type.String(),
    tx_id: Type.String(),
    amount: Type.String({ description: "In the invoice's currency" }),
    confirmed: Type.Boolean(),
    value_usd: Nullable(Type.String({ description: "USD at the invoice's fixed rate, recorded at confirmation" })),
    live_rate_usd: Nullable(
      Type.String({ description: "The source's rate at confirmation; null when none was fresh" }),
    ),
    live_value_usd: Nullable(Type.String({ description: "USD at the live rate at confirmation" })),
  },
  { additionalProperties: false },
);

const QuoteSchema = Type.Object(
  {
    invoice_id: Type.String(),
    fixed: Type.Boolean({ description: "False for invoices made before quotes were fixed (catalog rates)" }),
    rates: Type.Array(QuoteRateSchema, {
      description: "The rates fixed at creation: the currency's, then the settlement's",
    }),
    payments: Type.Array(PaymentValueSchema),
  },
  { additionalProperties: false, description: "An invoice's fixed quote and its payments' USD values (product §22)" },
);

export function registerExtensions(app: App, ctx: ServiceContext): void {
  const auth = merchantAuth(ctx);
  registerGetInvoiceQuote(app, ctx, auth);
  registerGetWithdrawal(app, ctx, auth);
  registerGetRefund(app, ctx, auth);
  registerListInvoices(app, ctx, auth);
  registerListWithdrawals(app, ctx, auth);
  registerListRefunds(app, ctx, auth);
  registerListEvents(app, ctx, auth);
  registerGetBalances(app, ctx, auth);
}

const PublicBalance = Type.Object(
  {
    currency: Type.String({ description: "The ticker" }),
    internalTicker: Type.String({ description: "The catalog entry (one per network of the ticker)" }),
    network: Type.String(),
    available: Type.String({ description: "What the merchant may withdraw, in the entry's units" }),
  },
  { additionalProperties: false },
);

/** The merchant's own balances, per catalog entry (an agent's MCP server reads them, issue 46). */
function registerGetBalances(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.get(
    "/public/v1/balances",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetBalances",
        tags,
        summary: "This merchant's available balance in every catalog currency, per network",
        security,
        response: { 200: Type.Array(PublicBalance), ...problems(401, 429) },
      },
    },
    async (request) => balancesOf(ctx.store, ownerOf(request).merchantId),
  );
}

function registerGetInvoiceQuote(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.get(
    "/public/v1/invoices/:id/quote",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetInvoiceQuote",
        tags,
        summary:
          "The rates an invoice of this merchant was created with (used for all its conversions) and each payment's USD value at confirmation",
        security,
        params: IdParams,
        response: { 200: QuoteSchema, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const loaded = await findInvoiceForMerchant(ctx.store, ownerOf(request).merchantId, request.params.id);
      if (!loaded) throw new Problem("invoice_not_found", "No invoice with this id.");
      return quoteView(loaded);
    },
  );
}

function registerGetWithdrawal(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.get(
    "/public/v1/withdrawals/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetWithdrawal",
        tags,
        summary: "A withdrawal of this merchant, as CreateWithdrawal answers it, in its current state",
        security,
        params: IdParams,
        response: { 200: WithdrawalResponse, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const view = await findWithdrawalViewForMerchant(ctx.store, ownerOf(request).merchantId, request.params.id);
      if (!view) throw new Problem("withdrawal_not_found", "No withdrawal with this id.");
      return { request: publicWithdrawalRequest(view) };
    },
  );
}

function registerGetRefund(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.get(
    "/public/v1/refunds/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetRefund",
        tags,
        summary: "A refund of this merchant, as RefundCrypto or RefundFiat answers it, in its current state",
        security,
        params: IdParams,
        response: { 200: RefundResponse, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const view = await findRefundViewForMerchant(ctx.store, ownerOf(request).merchantId, request.params.id);
      if (!view) throw new Problem("refund_not_found", "No refund with this id.");
      return { request: publicRefundRequest(view) };
    },
  );
}

function registerListInvoices(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const InvoiceListQuery = listQuery(
    {
      status: Type.Optional(InvoiceStatusSchema),
      paymentLinkId: Type.Optional(
        Type.String({ minLength: 1, maxLength: 100, description: "Only the invoices this payment link made" }),
      ),
      abandoned: Type.Optional(
        Type.Boolean({
          description:
            "false: leave out the abandoned invoices (a payment link's invoices that expired with nothing paid); true: only those",
        }),
      ),
    },
    "an invoice",
  );
  app.get(
    "/public/v1/invoices",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListInvoices",
        tags,
        summary: "This merchant's invoices, newest first",
        security,
        querystring: InvoiceListQuery,
        response: { 200: listAnswer(InvoiceSchema, "A page of invoices"), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const query: Static<typeof InvoiceListQuery> = request.query;
      const page = await listInvoices(ctx.store, ownerOf(request).merchantId, {
        ...pageWindow(query),
        status: query.status,
        paymentLinkId: query.paymentLinkId,
        abandoned: query.abandoned,
      });
      if (!page.ok) throw listProblem(page.error, page.detail);
      return {
        data: page.value.data.map((loaded) => invoiceBody(loaded, ctx.config.publicBaseUrl)),
        has_more: page.value.hasMore,
      };
    },
  );
}

function registerListWithdrawals(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const WithdrawalListQuery = listQuery({ status: Type.Optional(PayoutRequestStatus) }, "a withdrawal");
  app.get(
    "/public/v1/withdrawals",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListWithdrawals",
        tags,
        summary: "This merchant's withdrawals, newest first",
        security,
        querystring: WithdrawalListQuery,
        response: { 200: listAnswer(PublicWithdrawalRequest, "A page of withdrawals"), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const query: Static<typeof WithdrawalListQuery> = request.query;
      const page = await listWithdrawals(ctx.store, ownerOf(request).merchantId, {
        ...pageWindow(query),
        status: query.status,
      });
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data.map(publicWithdrawalRequest), has_more: page.value.hasMore };
    },
  );
}

function registerListRefunds(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const RefundListQuery = listQuery({ status: Type.Optional(PayoutRequestStatus) }, "a refund");
  app.get(
    "/public/v1/refunds",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListRefunds",
        tags,
        summary: "This merchant's refunds, newest first",
        security,
        querystring: RefundListQuery,
        response: { 200: listAnswer(PublicRefundRequest, "A page of refunds"), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const query: Static<typeof RefundListQuery> = request.query;
      const page = await listRefunds(ctx.store, ownerOf(request).merchantId, {
        ...pageWindow(query),
        status: query.status,
      });
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data.map(publicRefundRequest), has_more: page.value.hasMore };
    },
  );
}

function registerListEvents(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const EventListQuery = listQuery({ type: Type.Optional(Literals(EVENT_TYPES)) }, "an event");
  app.get(
    "/public/v1/events",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListEvents",
        tags,
        summary:
          "This merchant's events, newest first: every invoice status change and payout outcome, each exactly as its callback body",
        security,
        querystring: EventListQuery,
        response: { 200: listAnswer(EventSchema, "A page of events"), ...problems(400, 401, 429) },
      },
    },
    async (request, reply) => {
      const query: Static<typeof EventListQuery> = request.query;
      const page = await listEvents(ctx.store, ownerOf(request).merchantId, { ...pageWindow(query), type: query.type });
      if (!page.ok) throw listProblem(page.error, page.detail);
      // Each event is its stored text, byte for byte as its callback sent it: never parsed and re-serialized.
      const text = `{"data":[${page.value.data.map((e) => e.body).join(",")}],"has_more":${page.value.hasMore}}`;
      reply.type("application/json; charset=utf-8");
      return text as unknown as Static<ReturnType<typeof listAnswer<typeof EventSchema>>>;
    },
  );
}
