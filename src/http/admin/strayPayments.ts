// Operator API: GET /stray-payments (product §23): transfers to a deposit address that its invoice does not take, never credited, for the operator to return or account for by hand.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { formatAmount } from "../../domain/money.ts";
import { listStrayPayments, type StrayPaymentView } from "../../store/strayPayments.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

export const StrayPaymentSchema = Type.Object(
  {
    invoiceId: Type.String(),
    network: Type.String(),
    txId: Type.String({ description: "`<hash>` (native coin) or `<hash>:<logIndex>` (token transfer)" }),
    currency: Type.String({ description: "The ticker (`USDT`)" }),
    internalTicker: Type.String({ description: "The catalog entry the transfer was in (`USDT_ERC20`)" }),
    amount: Type.String({ description: "In whole units of that entry" }),
    fromAddress: Type.String(),
    blockNumber: Type.Integer(),
    createdAt: Type.String({ description: "When the scanner saw it" }),
  },
  { additionalProperties: false },
);

export function registerAdminStrayPayments(app: App, ctx: ServiceContext): void {
  app.get(
    "/stray-payments",
    {
      schema: {
        operationId: "AdminListStrayPayments",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        summary:
          "Transfers to an invoice's deposit address that the invoice does not take (another network than an internalTicker invoice's, or another currency), newest first; never credited",
        querystring: Type.Object(
          {
            invoiceId: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
            limit: Type.Optional(Type.String({ pattern: "^(?:[1-9][0-9]?|100)$" })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ items: Type.Array(StrayPaymentSchema) }, { additionalProperties: false }),
          ...problems(400, 401),
        },
      },
    },
    async (request) => {
      const rows = await listStrayPayments(ctx.store, {
        invoiceId: request.query.invoiceId,
        limit: Number(request.query.limit ?? "50"),
      });
      return { items: rows.map(strayPaymentBody) };
    },
  );
}

/** A stray payment as the operator API answers it (the list and the invoice view). */
export function strayPaymentBody(r: StrayPaymentView): Static<typeof StrayPaymentSchema> {
  return {
    invoiceId: r.invoiceId,
    network: r.network,
    txId: r.txId,
    currency: r.ticker,
    internalTicker: r.internalTicker,
    amount: formatAmount(r.amountMinor, r.decimals),
    fromAddress: r.fromAddress,
    blockNumber: Number(r.blockNumber),
    createdAt: r.createdAt,
  };
}
