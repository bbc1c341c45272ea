// Dashboard ledger (product §14): each balance's entries with their cause, newest first in keyset pages, and a bounded CSV export.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { csvRow } from "../../domain/csv.ts";
import { formatAmount } from "../../domain/money.ts";
import { findCurrency } from "../../store/currencies.ts";
import { type LedgerLine, listLedgerEntries, merchantBalance } from "../../store/ledgerLines.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";
import { security, tags } from "./moneyCommon.ts";
import { type DashboardScope, requireRole } from "./session.ts";

/** Rows of one CSV export at most; `x-next-before` names where the next export starts. */
export const LEDGER_CSV_ROWS = 10_000;

const LedgerQuery = Type.Object(
  {
    currency: Type.String({ minLength: 1, maxLength: 20 }),
    before: Type.Optional(Type.String({ pattern: "^[1-9][0-9]{0,15}$", description: "Entries before this entry id" })),
    limit: Type.Optional(Type.String({ pattern: "^(?:[1-9][0-9]?|100)$" })),
  },
  { additionalProperties: false },
);

const LedgerEntry = Type.Object(
  {
    id: Type.Integer(),
    cause: Type.Union([
      Type.Literal("invoice"),
      Type.Literal("withdrawal"),
      Type.Literal("refund"),
      Type.Literal("adjustment"),
      Type.Literal("reversal"),
      Type.Literal("fee"),
      Type.Literal("dispute"),
      Type.Literal("deposit"),
    ]),
    causeId: Type.String({
      description: "The invoice id, request id, adjustment id, dispute id or deposit id that caused it",
    }),
    kind: Type.String(),
    memo: Nullable(Type.String()),
    amount: Type.String({ description: "Signed: positive credits the balance, negative debits it" }),
    createdAt: Type.String(),
  },
  { additionalProperties: false },
);

async function currencyOf(ctx: ServiceContext, ticker: string) {
  const currency = await findCurrency(ctx.store, ticker);
  if (!currency)
    throw new Problem("unknown_currency", `Unknown currency ${ticker}.`, [
      { pointer: "/currency", detail: "is not a catalog ticker" },
    ]);
  return currency;
}

export function registerDashboardLedger(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  registerDashboardLedgerList(api, ctx, scope);
  registerDashboardLedgerExport(api, ctx, scope);
}

function registerDashboardLedgerList(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/ledger",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardLedger",
        tags,
        security,
        summary: "A balance and its ledger entries with their cause, newest first (page with nextBefore)",
        querystring: LedgerQuery,
        response: {
          200: Type.Object(
            {
              currency: Type.String(),
              balance: Type.String({ description: "The available balance: the sum of every entry of this balance" }),
              items: Type.Array(LedgerEntry),
              nextBefore: Nullable(Type.String()),
            },
            { additionalProperties: false },
          ),
          ...problems(400, 401),
        },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const currency = await currencyOf(ctx, request.query.currency);
      const limit = Number(request.query.limit ?? "50");
      const before = request.query.before === undefined ? undefined : Number(request.query.before);
      const [balance, lines] = await Promise.all([
        merchantBalance(ctx.store, user.merchantId, currency.ticker),
        listLedgerEntries(ctx.store, user.merchantId, currency.ticker, before, limit),
      ]);
      const last = lines.at(-1);
      return {
        currency: currency.ticker,
        balance: formatAmount(balance, currency.decimals),
        items: lines.map((line: LedgerLine) => ({
          id: line.id,
          cause: line.cause,
          causeId: line.causeId,
          kind: line.kind,
          memo: line.memo,
          amount: formatAmount(line.amountMinor, currency.decimals),
          createdAt: line.createdAt,
        })),
        nextBefore: lines.length === limit && last ? String(last.id) : null,
      };
    },
  );
}

function registerDashboardLedgerExport(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/ledger/export",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardLedgerExport",
        tags,
        security,
        summary: `A balance's entries as CSV, newest first, at most ${LEDGER_CSV_ROWS} rows (x-next-before: where the next export starts)`,
        querystring: Type.Object(
          { currency: LedgerQuery.properties.currency, before: LedgerQuery.properties.before },
          { additionalProperties: false },
        ),
        response: { 200: Type.String({ description: "text/csv" }), ...problems(400, 401) },
      },
    },
    async (request, reply) => {
      const { user } = requireRole(request, "read");
      const currency = await currencyOf(ctx, request.query.currency);
      const before = request.query.before === undefined ? undefined : Number(request.query.before);
      const lines = await listLedgerEntries(ctx.store, user.merchantId, currency.ticker, before, LEDGER_CSV_ROWS);
      // Debit and credit as unsigned columns: a signed amount would start with "-", which the formula guard must quote.
      let body = csvRow(["entry_id", "created_at", "currency", "cause", "cause_id", "kind", "credit", "debit", "memo"]);
      for (const line of lines) {
        const amount = formatAmount(line.amountMinor < 0n ? -line.amountMinor : line.amountMinor, currency.decimals);
        body += csvRow([
          String(line.id),
          line.createdAt,
          currency.ticker,
          line.cause,
          line.causeId,
          line.kind,
          line.amountMinor > 0n ? amount : null,
          line.amountMinor < 0n ? amount : null,
          line.memo,
        ]);
      }
      const last = lines.at(-1);
      if (lines.length === LEDGER_CSV_ROWS && last) reply.header("x-next-before", String(last.id));
      return reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="ledger-${currency.ticker}.csv"`)
        .send(body);
    },
  );
}
