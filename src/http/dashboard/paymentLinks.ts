// The dashboard's payment links (product §25): the merchant API's link objects behind a session: create, list, deactivate, and the invoices a link made; changes are audited.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { createPaymentLink, listLinkInvoices, listPaymentLinks, setPaymentLinkActive } from "../../app/paymentLinks.ts";
import { listAnswer, listProblem, listQuery, pageWindow } from "../lists.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { LinkInvoice, PaymentLink, PaymentLinkBody, PaymentLinkIdParams } from "../shapes.ts";
import { type DashboardScope, requireRole } from "./session.ts";

const tags = ["dashboard"];
const security = [{ dashboardSession: [] }];
const notFound = () => new Problem("payment_link_not_found", "No payment link with this id.");

export function registerDashboardPaymentLinks(api: App, ctx: ServiceContext, scope: DashboardScope) {
  registerDashboardListPaymentLinks(api, ctx, scope);
  registerDashboardCreatePaymentLinkObject(api, ctx, scope);
  registerDashboardUpdatePaymentLink(api, ctx, scope);
  registerDashboardListPaymentLinkInvoices(api, ctx, scope);
}

function registerDashboardListPaymentLinks(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  const ListQuery = listQuery({}, "a payment link");
  api.get(
    "/links",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListPaymentLinks",
        tags,
        security,
        summary: "The merchant's payment links, newest first",
        querystring: ListQuery,
        response: { 200: listAnswer(PaymentLink, "A page of payment links"), ...problems(400, 401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const query: Static<typeof ListQuery> = request.query;
      const page = await listPaymentLinks(ctx, user.merchantId, pageWindow(query));
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
}

function registerDashboardCreatePaymentLinkObject(
  api: App,
  ctx: ServiceContext,
  { session, record }: DashboardScope,
): void {
  api.post(
    "/links",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardCreatePaymentLinkObject",
        tags,
        security,
        summary: "Creates a payment link (POST /public/v1/payment-links's body and rules)",
        body: PaymentLinkBody,
        response: { 200: PaymentLink, ...problems(400, 401, 403, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageInvoices");
      const created = await createPaymentLink(ctx, user.merchantId, request.body, (tx, link) =>
        record(request, tx, "payment_link.create", link.id),
      );
      return valueOrProblem(created);
    },
  );
}

function registerDashboardUpdatePaymentLink(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.patch(
    "/links/:id",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardUpdatePaymentLink",
        tags,
        security,
        summary: "Deactivates (active: false) or reactivates a payment link",
        params: PaymentLinkIdParams,
        body: Type.Object({ active: Type.Boolean() }, { additionalProperties: false }),
        response: { 200: PaymentLink, ...problems(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageInvoices");
      const { active } = request.body;
      const link = await setPaymentLinkActive(ctx, user.merchantId, request.params.id, active, (tx) =>
        record(request, tx, active ? "payment_link.activate" : "payment_link.deactivate", request.params.id),
      );
      if (!link) throw notFound();
      return link;
    },
  );
}

function registerDashboardListPaymentLinkInvoices(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/links/:id/invoices",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListPaymentLinkInvoices",
        tags,
        security,
        summary: "The invoices a payment link made, newest first (at most 100)",
        params: PaymentLinkIdParams,
        response: {
          200: Type.Object({ data: Type.Array(LinkInvoice) }, { additionalProperties: false }),
          ...problems(400, 401, 404),
        },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const rows = await listLinkInvoices(ctx, user.merchantId, request.params.id);
      if (rows === null) throw notFound();
      return { data: rows };
    },
  );
}
