// The dashboard's customers' deposit addresses (product §30): the merchant API's objects behind a session: list them (by customer), create one, deactivate or activate it, list its deposits and decide on a held one; changes are audited.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import {
  createDepositAddress,
  listCustomerAddresses,
  listCustomerDeposits,
  setAddressActive,
} from "../../app/depositAddresses.ts";
import { resolveHeldDeposit } from "../../app/depositDecisions.ts";
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
import { type DashboardScope, requireRole, requireStepUp } from "./session.ts";

const tags = ["dashboard"];
const security = [{ dashboardSession: [] }];

export function registerDashboardDepositAddresses(api: App, ctx: ServiceContext, scope: DashboardScope) {
  registerDashboardListAddresses(api, ctx, scope);
  registerDashboardCreateAddress(api, ctx, scope);
  registerDashboardUpdateAddress(api, ctx, scope);
  registerDashboardListDeposits(api, ctx, scope);
  registerDashboardResolveDeposit(api, ctx, scope);
}

function registerDashboardListAddresses(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  const ListQuery = listQuery(
    { customer: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The customer's reference" })) },
    "an address",
  );
  api.get(
    "/deposit-addresses",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListDepositAddresses",
        tags,
        security,
        summary: "The merchant's customers' deposit addresses, newest first; one customer's with `customer`",
        querystring: ListQuery,
        response: { 200: listAnswer(DepositAddress, "A page of deposit addresses"), ...problems(400, 401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const query: Static<typeof ListQuery> = request.query;
      const page = await listCustomerAddresses(ctx, user.merchantId, {
        ...pageWindow(query),
        customer: query.customer,
      });
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
}

function registerDashboardCreateAddress(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/deposit-addresses",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardCreateDepositAddress",
        tags,
        security,
        summary:
          "A customer's deposit address (POST /public/v1/deposit-addresses's body and rules): the same one for the same customer and currency",
        body: DepositAddressBody,
        response: { 200: DepositAddress, ...problems(400, 401, 403, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageInvoices");
      const made = await createDepositAddress(ctx, user.merchantId, request.body, (tx, row) =>
        record(request, tx, "deposit_address.create", row.id),
      );
      return valueOrProblem(made);
    },
  );
}

function registerDashboardUpdateAddress(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.patch(
    "/deposit-addresses/:id",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardUpdateDepositAddress",
        tags,
        security,
        summary: "Deactivates (active: false: later transfers are held for the merchant) or activates an address",
        params: DepositIdParams,
        body: Type.Object({ active: Type.Boolean() }, { additionalProperties: false }),
        response: { 200: DepositAddress, ...problems(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageInvoices");
      const { active } = request.body;
      const action = active ? "deposit_address.activate" : "deposit_address.deactivate";
      const address = await setAddressActive(ctx, user.merchantId, request.params.id, active, (tx) =>
        record(request, tx, action, request.params.id),
      );
      if (!address) throw new Problem("deposit_address_not_found", "No deposit address with this id.");
      return address;
    },
  );
}

function registerDashboardListDeposits(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  const ListQuery = listQuery(
    {
      depositAddressId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
      status: Type.Optional(DepositStatusSchema),
      network: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
    },
    "a deposit",
  );
  api.get(
    "/deposits",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListDeposits",
        tags,
        security,
        summary: "Transfers to the merchant's customers' addresses, newest first; by address, status or network",
        querystring: ListQuery,
        response: { 200: listAnswer(Deposit, "A page of deposits"), ...problems(400, 401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const query: Static<typeof ListQuery> = request.query;
      const filter = {
        ...pageWindow(query),
        depositAddressId: query.depositAddressId,
        status: query.status,
        network: query.network,
      };
      const page = await listCustomerDeposits(ctx, user.merchantId, filter);
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
}

function registerDashboardResolveDeposit(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/deposits/:id/resolve",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardResolveDeposit",
        tags,
        security,
        summary:
          "Decide on a deposit held at a deactivated address (POST /public/v1/deposits/{id}/resolve's rules): credit it, or refund it by claim link",
        params: DepositIdParams,
        body: ResolveBody,
        response: { 200: ResolvedDeposit, ...problems(400, 401, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      // Money leaves the merchant's hold on a refund: the role that may refund decides.
      const { user } = requireRole(request, "moveMoney");
      requireStepUp(request);
      const { action } = request.body;
      const resolved = await resolveHeldDeposit(ctx, {
        merchantId: user.merchantId,
        depositId: request.params.id,
        action,
        audit: (tx) => record(request, tx, `deposit.${action}`, request.params.id),
      });
      return valueOrProblem(resolved);
    },
  );
}
