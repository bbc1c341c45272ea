// Operator API (product §21): the screening decision on an invoice in aml_check, and the state of screening's sources.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { decideAmlOnInvoice } from "../../app/decideAml.ts";
import { screeningOverview } from "../../app/screeningOverview.ts";
import { InvoiceSchema, invoiceBody } from "../invoiceBody.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";

const AmlDecisionBody = Type.Object(
  {
    decision: Type.Union([Type.Literal("clear"), Type.Literal("block")]),
    paymentId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          "Decides one flagged late payment (one that reached the invoice after it stopped taking payments) instead of the invoice in aml_check: the invoice's status stays. Required when the invoice is not in aml_check.",
      }),
    ),
  },
  {
    additionalProperties: false,
    description:
      "Without `paymentId` (an invoice in aml_check): `clear`: the flagged payments count and the invoice settles (completed, or processing while it is underpaid); `block`: the invoice ends in aml_block; its funds go to the operator's screening account, never to the merchant. With `paymentId` (a flagged late payment): `clear`: it counts like any late payment (credited as an overpayment of a completed invoice, else resolvable); `block`: its funds go to the operator's screening account, never credited nor refunded.",
  },
);

const ListStatusSchema = Type.Object({
  path: Type.String(),
  entries: Type.Integer(),
  format: Nullable(Type.String()),
  loadedAt: Nullable(Type.String()),
  modifiedAt: Nullable(Type.String()),
  lastError: Nullable(Type.String()),
});

const ProviderStatusSchema = Type.Object({
  url: Type.String(),
  available: Type.Boolean(),
  lastAnswerAt: Nullable(Type.String()),
  lastFailureAt: Nullable(Type.String()),
  lastFailure: Nullable(Type.String()),
  cached: Type.Integer(),
});

const ScreeningOverviewSchema = Type.Object({
  warning: Nullable(
    Type.String({
      description: "Set when screening is off in live mode (no list, no provider): payments are not screened",
    }),
  ),
  list: Nullable(ListStatusSchema),
  provider: Nullable(ProviderStatusSchema),
  waitingPayments: Type.Integer(),
  oldestWaitingSince: Nullable(Type.String()),
  waitingDeposits: Type.Integer({
    description: "Customers' deposits whose sender waits for screening (the screening worker retries them)",
  }),
  depositsInAmlCheck: Type.Integer({
    description: "Customers' deposits waiting for the operator's decision: GET /admin/v1/deposits?status=aml_check",
  }),
});

export function registerAdminScreening(app: App, ctx: ServiceContext): void {
  const security = [{ adminToken: [] }];
  app.post(
    "/invoices/:id/aml",
    {
      schema: {
        operationId: "AdminDecideAml",
        tags: ["operator"],
        summary: "Decide on an invoice in aml_check, or on one flagged late payment: clear or block",
        security,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) }),
        body: AmlDecisionBody,
        response: { 200: InvoiceSchema, ...problems(400, 401, 404, 409, 415) },
      },
    },
    async (request) => {
      const { decision, paymentId } = request.body;
      const loaded = valueOrProblem(
        await decideAmlOnInvoice(ctx, request.params.id, decision, "operator", undefined, paymentId),
      );
      return invoiceBody(loaded, ctx.config.publicBaseUrl);
    },
  );

  app.get(
    "/screening",
    {
      schema: {
        operationId: "AdminScreening",
        tags: ["operator"],
        summary: "Screening's sources (the list file, the provider) and the payments waiting for screening",
        security,
        response: { 200: ScreeningOverviewSchema, ...problems(401) },
      },
    },
    async () => screeningOverview(ctx),
  );
}
