// The dashboard's invoices (product §14): list with filters and search, CSV export, detail with payments, history and callbacks, redelivery, payment links.
import { Readable } from "node:stream";
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { CreateInvoiceBody, createInvoiceFor } from "../../app/createInvoice.ts";
import { paidValueUsdMinor, paymentValueView, quoteRateViews } from "../../app/quotes.ts";
import { csvRow } from "../../domain/csv.ts";
import type { InvoiceView } from "../../domain/invoices.ts";
import { formatAmount } from "../../domain/money.ts";
import { formatUsd } from "../../domain/rates.ts";
import { assert } from "../../domain/result.ts";
import { findCallbackEventWithAttempts, listInvoiceCallbacks } from "../../store/callbacks.ts";
import { disputesOfInvoice } from "../../store/cardPayments.ts";
import { invoiceStatusHistory } from "../../store/invoiceHistory.ts";
import {
  findInvoiceForMerchant,
  type InvoiceListFilter,
  type LoadedInvoice,
  listInvoices,
  listInvoicesByOrderNo,
} from "../../store/invoices.ts";
import { MAX_PAGE_LIMIT } from "../../store/keyset.ts";
import { redeliverCallbackEvent } from "../callbackRedelivery.ts";
import { adminCallbackEvent, CallbackEventSchema } from "../callbackSchemas.ts";
import { DisputeSchema, disputeViews } from "../disputeViews.ts";
import { InvoiceIdParams, InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import { InvoiceStatusSchema, listAnswer, listProblem, listQuery, pageWindow } from "../lists.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { QuoteRateSchema } from "../shapes.ts";
import { type DashboardScope, requireRole } from "./session.ts";

const tags = ["dashboard"];
const security = [{ dashboardSession: [] }];

const PaymentSchema = Type.Object(
  {
    id: Type.String(),
    txId: Type.String(),
    amount: Type.String({ description: "In the invoice's currency" }),
    fromAddress: Nullable(Type.String()),
    confirmed: Type.Boolean(),
    amlStatus: Type.String(),
    provider: Nullable(Type.String()),
    createdAt: Type.String(),
    valueUsd: Nullable(Type.String({ description: "USD at the invoice's fixed rate, recorded at confirmation" })),
    liveRateUsd: Nullable(Type.String({ description: "The source's live rate at confirmation" })),
    liveValueUsd: Nullable(Type.String({ description: "USD at the live rate at confirmation" })),
  },
  { additionalProperties: false },
);

const InvoiceDetail = Type.Object(
  {
    invoice: InvoiceSchema,
    payments: Type.Array(PaymentSchema),
    quote: Type.Object(
      { fixed: Type.Boolean(), rates: Type.Array(QuoteRateSchema) },
      { additionalProperties: false, description: "The rates fixed at the invoice's creation (product §22)" },
    ),
    history: Type.Array(
      Type.Object(
        { status: Type.String(), at: Type.String(), eventId: Nullable(Type.String()) },
        { additionalProperties: false, description: "Created (pending), then each status change, oldest first" },
      ),
    ),
    callbacks: Type.Array(CallbackEventSchema),
    disputes: Type.Array(DisputeSchema, { description: "Card disputes of the invoice's payment, oldest first" }),
  },
  { additionalProperties: false },
);

const status = Type.Optional(InvoiceStatusSchema);
const DashboardListQuery = listQuery(
  {
    status,
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: "An invoice id or an order number; when given, the other parameters are ignored",
      }),
    ),
  },
  "an invoice",
);
const { limit: _limit, ...exportProperties } = listQuery({ status }, "an invoice").properties;
const ExportQuery = Type.Object(exportProperties, { additionalProperties: false });

/** One CSV file holds at most this many invoices: an export is bounded per request like every list. */
export const EXPORT_MAX_ROWS = 10_000;

const CSV_COLUMNS = [
  "id",
  "created_at",
  "updated_at",
  "status",
  "type",
  "currency",
  "amount",
  "final_amount",
  "paid_amount",
  "merchant_fee",
  "network_and_other_fees",
  "merchant_receive_amount",
  "settlement_currency",
  "convert_currency",
  "order_no",
  "description",
  "expires_at",
  "invoice_url",
] as const satisfies readonly (keyof InvoiceView)[];

/** Columns after the invoice's own: its fixed quote and its confirmed payments' USD value (product §22). */
const CSV_QUOTE_COLUMNS = ["quote_rates_usd", "paid_value_usd"] as const;

/** `ETH=3012.5;USDT=1`: the rates the invoice was created with; empty before quotes were fixed. */
function quoteCells(loaded: LoadedInvoice): string[] {
  const rates = quoteRateViews(loaded.invoice.quoteRates ?? []);
  const paid = paidValueUsdMinor(loaded);
  return [rates.map((r) => `${r.currency}=${r.rate_usd}`).join(";"), paid === null ? "" : formatUsd(paid)];
}

function dashboardValue(v: ReturnType<typeof paymentValueView>) {
  return { valueUsd: v.value_usd, liveRateUsd: v.live_rate_usd, liveValueUsd: v.live_value_usd };
}

function notFound(): Problem {
  return new Problem("invoice_not_found", "No invoice with this id.");
}

function payments(loaded: LoadedInvoice) {
  return loaded.payments.map((p) => ({
    ...dashboardValue(paymentValueView(p, loaded.decimals)),
    id: p.id,
    txId: p.txId,
    amount: formatAmount(p.amountMinor, loaded.decimals),
    fromAddress: p.fromAddress,
    confirmed: p.confirmed,
    amlStatus: p.amlStatus,
    provider: p.provider,
    createdAt: p.createdAt,
  }));
}

export function registerDashboardInvoices(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  registerDashboardListInvoices(api, ctx, scope);
  registerDashboardExportInvoices(api, ctx, scope);
  registerDashboardGetInvoice(api, ctx, scope);
  registerDashboardGetCallbackEvent(api, ctx, scope);
  registerDashboardRedeliverCallback(api, ctx, scope);
  registerDashboardCreatePaymentLink(api, ctx, scope);
}

function registerDashboardListInvoices(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/invoices",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListInvoices",
        tags,
        security,
        summary: "The merchant's invoices, newest first, keyset-paged and filtered; or the matches of a search (q)",
        querystring: DashboardListQuery,
        response: { 200: listAnswer(InvoiceSchema, "A page of invoices"), ...problems(400, 401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const query: Static<typeof DashboardListQuery> = request.query;
      const answer = (list: LoadedInvoice[], hasMore: boolean) => ({
        data: list.map((loaded) => invoiceBody(loaded, ctx.config.publicBaseUrl)),
        has_more: hasMore,
      });
      if (query.q !== undefined) {
        // The id first, then the order number's invoices (at most BY_ORDER_LIMIT, newest first).
        const q = query.q.trim();
        const byId = await findInvoiceForMerchant(ctx.store, user.merchantId, q);
        const byOrder = await listInvoicesByOrderNo(ctx.store, user.merchantId, q);
        return answer([...(byId ? [byId] : []), ...byOrder.filter((l) => l.invoice.id !== byId?.invoice.id)], false);
      }
      const page = await listInvoices(ctx.store, user.merchantId, { ...pageWindow(query), status: query.status });
      if (!page.ok) throw listProblem(page.error, page.detail);
      return answer(page.value.data, page.value.hasMore);
    },
  );
}

function registerDashboardExportInvoices(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.get(
    "/invoices/export.csv",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardExportInvoices",
        tags,
        security,
        summary: `The filtered invoices as CSV (text/csv), newest first, streamed; at most ${EXPORT_MAX_ROWS} per file (audited)`,
        description:
          "RFC 4180, CRLF rows, a header row. Cells a spreadsheet would read as a formula (starting with = + - @, tab or carriage return) are prefixed with an apostrophe. For the next file, pass the last row's id as starting_after.",
        querystring: ExportQuery,
        response: {
          200: {
            description: "The invoices as CSV, with a header row",
            // Streamed: the handler sends a Readable of CSV lines, documented as the text it is.
            content: { "text/csv": { schema: Type.Unsafe<Readable>({ type: "string" }) } },
          },
          ...problems(400, 401),
        },
      },
    },
    async (request, reply) => {
      const { user } = requireRole(request, "read");
      const query: Static<typeof ExportQuery> = request.query;
      const filter: InvoiceListFilter = { ...pageWindow({ ...query, limit: MAX_PAGE_LIMIT }), status: query.status };
      // The first page is read before anything is sent, so a bad starting_after is still a 400 problem.
      const first = await listInvoices(ctx.store, user.merchantId, filter);
      if (!first.ok) throw listProblem(first.error, first.detail);
      const filters = Object.entries(query).filter((e): e is [string, string] => typeof e[1] === "string");
      await ctx.store.transaction((tx) =>
        record(request, tx, "invoice.export", filters.length > 0 ? new URLSearchParams(filters).toString() : null),
      );
      const publicBaseUrl = ctx.config.publicBaseUrl;
      const merchantId = user.merchantId;
      async function* lines(): AsyncGenerator<string> {
        yield csvRow([...CSV_COLUMNS, ...CSV_QUOTE_COLUMNS]);
        let page = first.ok ? first.value : { data: [], hasMore: false };
        let sent = 0;
        for (;;) {
          for (const loaded of page.data) {
            const view = invoiceBody(loaded, publicBaseUrl);
            yield csvRow([...CSV_COLUMNS.map((c) => view[c]), ...quoteCells(loaded)]);
          }
          sent += page.data.length;
          const last = page.data.at(-1);
          if (!page.hasMore || last === undefined || sent >= EXPORT_MAX_ROWS) return;
          const limit = Math.min(MAX_PAGE_LIMIT, EXPORT_MAX_ROWS - sent);
          const next = await listInvoices(ctx.store, merchantId, { ...filter, limit, startingAfter: last.invoice.id });
          // Invoices are never deleted, and the cursor is an invoice of this merchant just read.
          assert(next.ok, "an exported invoice is a cursor of its merchant");
          page = next.value;
        }
      }
      const day = new Date().toISOString().slice(0, 10);
      reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="invoices-${day}.csv"`)
        .header("cache-control", "no-store");
      return reply.send(Readable.from(lines()));
    },
  );
}

function registerDashboardGetInvoice(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/invoices/:id",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardGetInvoice",
        tags,
        security,
        summary: "An invoice with its payments, status history and callback events (each with its attempts)",
        params: InvoiceIdParams,
        response: { 200: InvoiceDetail, ...problems(400, 401, 404) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      // Reads only, outside a transaction: on SQLite they go to the read connection, not the writer's queue.
      const loaded = await findInvoiceForMerchant(ctx.store, user.merchantId, request.params.id);
      if (!loaded) throw notFound();
      const [callbacks, changes, disputes] = await Promise.all([
        listInvoiceCallbacks(ctx.store, loaded.invoice.id),
        invoiceStatusHistory(ctx.store, user.merchantId, loaded.invoice.id),
        disputesOfInvoice(ctx.store, loaded.invoice.id),
      ]);
      return {
        invoice: invoiceBody(loaded, ctx.config.publicBaseUrl),
        payments: payments(loaded),
        quote: {
          fixed: (loaded.invoice.quoteRates ?? null) !== null,
          rates: quoteRateViews(loaded.invoice.quoteRates ?? []),
        },
        history: [{ status: "pending", at: loaded.invoice.createdAt, eventId: null }, ...changes],
        callbacks: callbacks.map(adminCallbackEvent),
        disputes: await disputeViews(ctx.store, disputes),
      };
    },
  );
}

function registerDashboardGetCallbackEvent(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  const EventIdParams = Type.Object(
    { eventId: Type.String({ minLength: 1, maxLength: 200 }) },
    { additionalProperties: false },
  );
  api.get(
    "/callback-events/:eventId",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardGetCallbackEvent",
        tags,
        security,
        summary: "A callback event of this merchant with its attempts",
        params: EventIdParams,
        response: { 200: CallbackEventSchema, ...problems(401, 404) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const event = await findCallbackEventWithAttempts(ctx.store, request.params.eventId);
      if (!event || event.merchantId !== user.merchantId)
        throw new Problem("callback_event_not_found", "No callback event with this id.");
      return adminCallbackEvent(event);
    },
  );
}

function registerDashboardRedeliverCallback(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/callback-events/:eventId/redeliver",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardRedeliverCallback",
        tags,
        security,
        summary:
          "Sends a callback event again now (same id and body, fresh retry schedule); 409 while an attempt is in flight",
        params: Type.Object(
          { eventId: Type.String({ minLength: 1, maxLength: 200 }) },
          { additionalProperties: false },
        ),
        response: { 200: CallbackEventSchema, ...problems(401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageCallbacks");
      const event = await ctx.store.transaction(async (tx) => {
        const redelivered = await redeliverCallbackEvent(tx, request.params.eventId, user.merchantId);
        await record(request, tx, "callback.redeliver", redelivered.id);
        return redelivered;
      });
      return adminCallbackEvent(event);
    },
  );
}

function registerDashboardCreatePaymentLink(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/payment-links",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardCreatePaymentLink",
        tags,
        security,
        summary: "Creates an invoice (CreateInvoice's body and rules); its invoice_url is the payment link",
        body: CreateInvoiceBody,
        response: { 200: InvoiceSchema, ...problems(400, 401, 403, 409, 415, 503) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageInvoices");
      const loaded = valueOrProblem(
        await createInvoiceFor(ctx, user.merchantId, request.body, (tx, created) =>
          record(request, tx, "invoice.create_payment_link", created.invoice.id),
        ),
      );
      return invoiceBody(loaded, ctx.config.publicBaseUrl);
    },
  );
}
