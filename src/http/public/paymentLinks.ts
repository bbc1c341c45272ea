// Payment links API (product §25, extension): create, list, read and deactivate a merchant's links, and list the invoices a link made; each handler parses, calls one use case and answers.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import {
  createPaymentLink,
  getPaymentLink,
  LINK_INVOICES_LIMIT,
  listLinkInvoices,
  listPaymentLinks,
  setPaymentLinkActive,
} from "../../app/paymentLinks.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { listAnswer, listProblem, listQuery, pageWindow } from "../lists.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { LinkInvoice, PaymentLink, PaymentLinkBody, PaymentLinkIdParams } from "../shapes.ts";
import { EXTENSIONS_TAG } from "./extensions.ts";

const tags = [EXTENSIONS_TAG];

/** Every route here: the merchant's API key. */
const security = [{ apiKey: [] }];

const PatchBody = Type.Object({ active: Type.Boolean() }, { additionalProperties: false });
const notFound = () => new Problem("payment_link_not_found", "No payment link with this id.");

export function registerPaymentLinks(app: App, ctx: ServiceContext): void {
  const auth = merchantAuth(ctx);
  registerCreatePaymentLink(app, ctx, auth);
  registerListPaymentLinks(app, ctx, auth);
  registerGetPaymentLink(app, ctx, auth);
  registerUpdatePaymentLink(app, ctx, auth);
  registerListPaymentLinkInvoices(app, ctx, auth);
}

function registerCreatePaymentLink(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.post(
    "/public/v1/payment-links",
    {
      onRequest: [auth],
      schema: {
        operationId: "CreatePaymentLink",
        tags,
        summary: "Create a payment link: a fixed amount, or bounds the payer chooses within",
        security,
        body: PaymentLinkBody,
        response: { 200: PaymentLink, ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const created = await createPaymentLink(ctx, ownerOf(request).merchantId, request.body);
      return valueOrProblem(created);
    },
  );
}

function registerListPaymentLinks(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const ListQuery = listQuery({}, "a payment link");
  app.get(
    "/public/v1/payment-links",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListPaymentLinks",
        tags,
        summary: "This merchant's payment links, newest first",
        security,
        querystring: ListQuery,
        response: { 200: listAnswer(PaymentLink, "A page of payment links"), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const query: Static<typeof ListQuery> = request.query;
      const page = await listPaymentLinks(ctx, ownerOf(request).merchantId, pageWindow(query));
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
}

function registerGetPaymentLink(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.get(
    "/public/v1/payment-links/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetPaymentLink",
        tags,
        summary: "A payment link of this merchant",
        security,
        params: PaymentLinkIdParams,
        response: { 200: PaymentLink, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const link = await getPaymentLink(ctx, ownerOf(request).merchantId, request.params.id);
      if (!link) throw notFound();
      return link;
    },
  );
}

function registerUpdatePaymentLink(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.patch(
    "/public/v1/payment-links/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "UpdatePaymentLink",
        tags,
        summary: "Deactivate (active: false) or reactivate a payment link; an inactive link answers 410",
        security,
        params: PaymentLinkIdParams,
        body: PatchBody,
        response: { 200: PaymentLink, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const link = await setPaymentLinkActive(ctx, ownerOf(request).merchantId, request.params.id, request.body.active);
      if (!link) throw notFound();
      return link;
    },
  );
}

function registerListPaymentLinkInvoices(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.get(
    "/public/v1/payment-links/:id/invoices",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListPaymentLinkInvoices",
        tags,
        summary: `The invoices a payment link made, newest first (at most ${LINK_INVOICES_LIMIT})`,
        security,
        params: PaymentLinkIdParams,
        response: {
          200: Type.Object({ data: Type.Array(LinkInvoice) }, { additionalProperties: false }),
          ...problems(400, 401, 404, 429),
        },
      },
    },
    async (request) => {
      const rows = await listLinkInvoices(ctx, ownerOf(request).merchantId, request.params.id);
      if (rows === null) throw notFound();
      return { data: rows };
    },
  );
}
