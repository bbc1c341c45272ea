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
import type { App } from "../app.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { Problem } from "../problem.ts";
import { HttpUrl, Nullable, problems } from "../schemas.ts";
import { EXTENSIONS_TAG, listAnswer, listProblem, listQuery, pageWindow } from "./extensions.ts";

const tags = [EXTENSIONS_TAG];

/** Every route here: the merchant's API key. */
const security = [{ apiKey: [] }];

const Money = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

export const PaymentLinkBody = Type.Object(
  {
    currency: Type.String({ minLength: 1, maxLength: 20, description: "A ticker of the catalog" }),
    amount: Type.Optional(Money("Fixed price, a plain decimal string")),
    minAmount: Type.Optional(Money("Lowest amount the payer may choose (with maxAmount)")),
    maxAmount: Type.Optional(Money("Highest amount the payer may choose (with minAmount)")),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
    callbackUrl: Type.Optional(HttpUrl),
    successUrl: Type.Optional(HttpUrl),
    returnUrl: Type.Optional(HttpUrl),
    failUrl: Type.Optional(HttpUrl),
    active: Type.Optional(Type.Boolean({ description: "Default true" })),
  },
  { additionalProperties: false, description: "Either amount, or minAmount and maxAmount" },
);

export const PaymentLink = Type.Object(
  {
    id: Type.String(),
    url: Type.String({ description: "The payer's link, /l/{id}: one invoice per browser session, 303 to its page" }),
    currency: Type.String(),
    amount: Nullable(Type.String({ description: "Fixed price; null when the payer chooses" })),
    min_amount: Nullable(Type.String()),
    max_amount: Nullable(Type.String()),
    description: Nullable(Type.String()),
    callback_url: Nullable(Type.String()),
    success_url: Nullable(Type.String()),
    return_url: Nullable(Type.String()),
    fail_url: Nullable(Type.String()),
    active: Type.Boolean(),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

export const LinkInvoice = Type.Object(
  {
    id: Type.String(),
    status: Type.String(),
    currency: Type.String(),
    amount: Type.String(),
    created_at: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
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
      if (!created.ok) {
        const { code, detail, pointer } = created.refusal;
        throw new Problem(code, detail, [{ pointer, detail }]);
      }
      return created.value;
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
        params: IdParams,
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
        params: IdParams,
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
        params: IdParams,
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
