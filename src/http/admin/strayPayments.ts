// Operator API: stray payments (product §23, issue 50): GET /stray-payments lists transfers to a deposit address that its invoice or customer address does not take (never credited); POST /stray-payments/{id}/recover moves one at a forwarder to the hot wallet (audited, once), /return marks it sent back.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { markStrayReturned, recoverStray, strayId } from "../../app/strayRecovery.ts";
import { reportStrays } from "../../app/strayReports.ts";
import { formatAmount } from "../../domain/money.ts";
import { listStrayPayments, type StrayPaymentView } from "../../store/strayPayments.ts";
import type { StrayRecovery } from "../../store/strayRecoveries.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";

export const StrayRecoverySchema = Type.Object(
  {
    state: Type.Union(
      [
        Type.Literal("waiting"),
        Type.Literal("flushing"),
        Type.Literal("recovered"),
        Type.Literal("failed"),
        Type.Literal("returned"),
      ],
      {
        description:
          "waiting for the next flush of its network, flushing (in one), recovered (in the hot wallet, the operator's stray funds), failed (the token refused to move past the flush attempts), returned (marked sent back)",
      },
    ),
    txHash: Nullable(Type.String({ description: "The flush that moved it" })),
    amountMinor: Nullable(
      Type.String({
        description:
          "What the factory's Flushed event moved, in the token's minor units: the forwarder's whole balance of the token",
      }),
    ),
    ledgerCurrency: Type.String({
      description: "The ledger currency of account `operator:stray:<network>`: the entry, or `<network>:<contract>`",
    }),
    actor: Type.String(),
    lastError: Nullable(Type.String()),
    returnNote: Nullable(Type.String()),
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { additionalProperties: false },
);

export const StrayPaymentSchema = Type.Object(
  {
    id: Type.String({ description: "`<network>:<txId>`: the stray's id in /stray-payments/{id}/recover" }),
    invoiceId: Nullable(Type.String({ description: "The invoice whose deposit address it reached" })),
    depositAddressId: Nullable(Type.String({ description: "Or the customer's deposit address it reached" })),
    network: Type.String(),
    txId: Type.String({ description: "`<hash>` (native coin) or `<hash>:<logIndex>` (token transfer)" }),
    currency: Nullable(Type.String({ description: "The ticker (`USDT`); null: a token the catalog lacks" })),
    internalTicker: Nullable(Type.String({ description: "The catalog entry the transfer was in (`USDT_ERC20`)" })),
    token: Nullable(Type.String({ description: "The contract of a token the catalog lacks" })),
    amount: Type.String({ description: "In whole units of that entry (in minor units for a token the catalog lacks)" }),
    fromAddress: Type.String(),
    blockNumber: Type.Integer(),
    createdAt: Type.String({ description: "When the scanner saw it" }),
    recovery: Nullable(StrayRecoverySchema),
  },
  { additionalProperties: false },
);

export function registerAdminStrayPayments(app: App, ctx: ServiceContext): void {
  registerList(app, ctx);
  registerReport(app, ctx);
  registerRecover(app, ctx);
  registerReturn(app, ctx);
}

function registerReport(app: App, ctx: ServiceContext): void {
  app.post(
    "/stray-payments",
    {
      schema: {
        operationId: "AdminReportStrayPayments",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        summary:
          "List the transfers of a token the catalog lacks, or of the native coin to an address that takes a token, that one transaction made to deposit addresses",
        description:
          "The scanner reads only the catalog's tokens, and the native coin only while a native-coin payment is awaited on the network: a token the catalog lacks, or the native coin (ETH sent to a USDT address), sent to a forwarder deposit address (an invoice's or a customer's) is listed once the operator names its transaction (the payer's, found on the explorer): from its receipt's Transfer logs, and from the transaction's own value to an address that takes a token; once it is the network's confirmations deep. Idempotent. Then POST /stray-payments/{id}/recover moves it.",
        body: Type.Object(
          {
            network: Type.String({ minLength: 1, maxLength: 100 }),
            txHash: Type.String({ pattern: "^0x[0-9a-fA-F]{64}$" }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ items: Type.Array(StrayPaymentSchema) }, { additionalProperties: false }),
          ...problems(400, 401, 404, 409, 503),
        },
      },
    },
    async (request) => {
      const report = { network: request.body.network, txHash: request.body.txHash as `0x${string}` };
      const strays = valueOrProblem(await reportStrays(ctx, report));
      // One transaction's transfers: at most a block's logs, well under a page; as the list answers them.
      const of = { network: report.network, txIds: strays.map((s) => s.txId) };
      const views = await listStrayPayments(ctx.store, { of, limit: 100 });
      return { items: views.map(strayPaymentBody) };
    },
  );
}

const StrayIdParams = Type.Object({ id: Type.String({ minLength: 3, maxLength: 300 }) });

function registerRecover(app: App, ctx: ServiceContext): void {
  app.post(
    "/stray-payments/:id/recover",
    {
      schema: {
        operationId: "AdminRecoverStrayPayment",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        summary: "Move a stray payment at a forwarder to the hot wallet: the next flush of its network takes it",
        description:
          "The factory's flush of the stray's forwarder for its token (any token), through the hot wallet's outbox; once settled, the Flushed amount is the operator's stray funds in the ledger (`operator:stray:<network>`) until marked returned. Audited (`actor`). Idempotent: a stray already recovering or recovered is answered as it is, never moved twice. 409 stray_not_at_forwarder for a derived deposit address; 409 stray_factory_not_deployed where this hot wallet's factory is not recorded deployed on the network.",
        params: StrayIdParams,
        response: { 200: StrayRecoverySchema, ...problems(401, 404, 409) },
      },
    },
    async (request) => strayRecoveryBody(valueOrProblem(await recoverStray(ctx, request.params.id, "operator"))),
  );
}

function registerReturn(app: App, ctx: ServiceContext): void {
  app.post(
    "/stray-payments/:id/return",
    {
      schema: {
        operationId: "AdminMarkStrayPaymentReturned",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        summary: "Mark a recovered stray payment returned to its sender (sent from the hot wallet by hand)",
        description:
          "Debits the operator's stray funds to the payouts in the ledger, with the note. Idempotent once returned; 409 stray_not_recovered before it is recovered.",
        params: StrayIdParams,
        body: Type.Object(
          { note: Type.String({ minLength: 1, maxLength: 500, description: "How it was returned (the transaction)" }) },
          { additionalProperties: false },
        ),
        response: { 200: StrayRecoverySchema, ...problems(400, 401, 404, 409) },
      },
    },
    async (request) => {
      const by = { actor: "operator", note: request.body.note };
      return strayRecoveryBody(valueOrProblem(await markStrayReturned(ctx, request.params.id, by)));
    },
  );
}

function registerList(app: App, ctx: ServiceContext): void {
  app.get(
    "/stray-payments",
    {
      schema: {
        operationId: "AdminListStrayPayments",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        summary:
          "Transfers to a deposit address that its invoice or customer address does not take (another network than an internalTicker invoice's, or another currency), newest first; never credited; with their recovery",
        querystring: Type.Object(
          {
            invoiceId: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
            depositAddressId: Type.Optional(
              Type.String({
                minLength: 1,
                maxLength: 500,
                description: "Only the strays at this customer's deposit address",
              }),
            ),
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
        depositAddressId: request.query.depositAddressId,
        limit: Number(request.query.limit ?? "50"),
      });
      return { items: rows.map(strayPaymentBody) };
    },
  );
}

/** A stray payment as the operator API answers it (the list and the invoice view). */
export function strayPaymentBody(r: StrayPaymentView): Static<typeof StrayPaymentSchema> {
  return {
    id: strayId(r.network, r.txId),
    invoiceId: r.invoiceId,
    depositAddressId: r.depositAddressId ?? null,
    network: r.network,
    txId: r.txId,
    currency: r.ticker,
    internalTicker: r.internalTicker,
    token: r.token ?? null,
    amount: r.decimals === null ? r.amountMinor.toString() : formatAmount(r.amountMinor, r.decimals),
    fromAddress: r.fromAddress,
    blockNumber: Number(r.blockNumber),
    createdAt: r.createdAt,
    recovery: r.recovery === null ? null : strayRecoveryBody(r.recovery),
  };
}

function strayRecoveryBody(r: StrayRecovery): Static<typeof StrayRecoverySchema> {
  return {
    state: r.state,
    txHash: r.txHash,
    amountMinor: r.amountMinor === null ? null : r.amountMinor.toString(),
    ledgerCurrency: r.currency,
    actor: r.actor,
    lastError: r.lastError,
    returnNote: r.returnNote,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}
