// Deposit addresses per customer (product §30): create (the same address for the same customer and currency), list, read and deactivate them, and list their deposits; each handler parses, calls one use case and answers.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import {
  createDepositAddress,
  getCustomerDeposit,
  getDepositAddress,
  listCustomerAddresses,
  listCustomerDeposits,
  setAddressActive,
} from "../../app/depositAddresses.ts";
import { resolveHeldDeposit } from "../../app/depositDecisions.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import {
  Deposit,
  DepositAddress,
  DepositAddressBody,
  DepositIdParams,
  DepositStatusSchema,
  ResolveBody,
  ResolvedDeposit,
} from "../depositAddressShapes.ts";
import { listAnswer, listProblem, listQuery, pageWindow } from "../lists.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { EXTENSIONS_TAG } from "./extensions.ts";

const tags = [EXTENSIONS_TAG];
const security = [{ apiKey: [] }];
export function registerDepositAddresses(app: App, ctx: ServiceContext): void {
  const auth = merchantAuth(ctx);
  app.post(
    "/public/v1/deposit-addresses",
    {
      onRequest: [auth],
      schema: {
        operationId: "CreateDepositAddress",
        tags,
        summary: "A customer's deposit address in a currency: the same one for the same customer, however often asked",
        security,
        body: DepositAddressBody,
        response: { 200: DepositAddress, ...problems(400, 401, 429) },
      },
    },
    async (request) => valueOrProblem(await createDepositAddress(ctx, ownerOf(request).merchantId, request.body)),
  );
  registerAddressReads(app, ctx, auth);
  registerDepositReads(app, ctx, auth);
  registerDepositResolve(app, ctx, auth);
}

/**
 * Not signed: a decision on one deposit's status, moved by compare-and-set, so a retried request
 * cannot credit twice: it is refused with deposit_not_held (as cancelling a subscription twice is).
 */
function registerDepositResolve(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.post(
    "/public/v1/deposits/:id/resolve",
    {
      onRequest: [auth],
      schema: {
        operationId: "ResolveDeposit",
        tags,
        summary: "Decide on a deposit held at a deactivated address: credit it, or refund it by claim link",
        security,
        params: DepositIdParams,
        body: ResolveBody,
        response: { 200: ResolvedDeposit, ...problems(400, 401, 404, 409, 415, 429) },
      },
    },
    async (request) =>
      valueOrProblem(
        await resolveHeldDeposit(ctx, {
          merchantId: ownerOf(request).merchantId,
          depositId: request.params.id,
          action: request.body.action,
        }),
      ),
  );
}

function registerAddressReads(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const ListQuery = listQuery({ customer: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) }, "an address");
  app.get(
    "/public/v1/deposit-addresses",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListDepositAddresses",
        tags,
        summary: "This merchant's customers' deposit addresses, newest first",
        security,
        querystring: ListQuery,
        response: { 200: listAnswer(DepositAddress, "A page of deposit addresses"), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const query: Static<typeof ListQuery> = request.query;
      const filter = { ...pageWindow(query), customer: query.customer };
      const page = await listCustomerAddresses(ctx, ownerOf(request).merchantId, filter);
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
  const notFound = () => new Problem("deposit_address_not_found", "No deposit address with this id.");
  app.get(
    "/public/v1/deposit-addresses/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetDepositAddress",
        tags,
        summary: "A customer's deposit address",
        security,
        params: DepositIdParams,
        response: { 200: DepositAddress, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const address = await getDepositAddress(ctx, ownerOf(request).merchantId, request.params.id);
      if (!address) throw notFound();
      return address;
    },
  );
  app.patch(
    "/public/v1/deposit-addresses/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "UpdateDepositAddress",
        tags,
        summary: "Deactivate (active: false) or reactivate an address; transfers confirmed while inactive are held",
        security,
        params: DepositIdParams,
        body: Type.Object({ active: Type.Boolean() }, { additionalProperties: false }),
        response: { 200: DepositAddress, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const merchantId = ownerOf(request).merchantId;
      const address = await setAddressActive(ctx, merchantId, request.params.id, request.body.active);
      if (!address) throw notFound();
      return address;
    },
  );
}

function registerDepositReads(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const ListQuery = listQuery(
    {
      deposit_address_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      status: Type.Optional(DepositStatusSchema),
      network: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
    },
    "a deposit",
  );
  app.get(
    "/public/v1/deposits",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListDeposits",
        tags,
        summary: "Transfers to this merchant's customers' addresses, newest first",
        security,
        querystring: ListQuery,
        response: { 200: listAnswer(Deposit, "A page of deposits"), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const query: Static<typeof ListQuery> = request.query;
      const filter = {
        ...pageWindow(query),
        depositAddressId: query.deposit_address_id,
        status: query.status,
        network: query.network,
      };
      const page = await listCustomerDeposits(ctx, ownerOf(request).merchantId, filter);
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
  app.get(
    "/public/v1/deposits/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetDeposit",
        tags,
        summary: "A transfer to one of this merchant's customers' addresses",
        security,
        params: DepositIdParams,
        response: { 200: Deposit, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const deposit = await getCustomerDeposit(ctx, ownerOf(request).merchantId, request.params.id);
      if (!deposit) throw new Problem("deposit_not_found", "No deposit with this id.");
      return deposit;
    },
  );
}
