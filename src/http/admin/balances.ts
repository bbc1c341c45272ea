// Operator API: merchant balances and balance adjustments (the ledger's operator movements).
import { Type } from "typebox";
import { AdjustBalanceBody, adjustBalance } from "../../app/adjustBalance.ts";
import { balancesOf } from "../../app/balances.ts";
import type { ServiceContext } from "../../app/context.ts";
import { findMerchant } from "../../store/merchants.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { Balance, MerchantIdParams } from "./schemas.ts";

/** Every route here: the operator's bearer token. */
const security = [{ adminToken: [] }];

const merchantNotFound = () => new Problem("merchant_not_found", "No merchant with this id.");

export function registerAdminBalances(app: App, ctx: ServiceContext): void {
  registerAdminGetBalances(app, ctx);
  registerAdminAdjustBalance(app, ctx);
}

function registerAdminGetBalances(app: App, ctx: ServiceContext): void {
  app.get(
    "/merchants/:id/balances",
    {
      schema: {
        operationId: "AdminGetBalances",
        summary: "The merchant's balances per currency",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: Type.Array(Balance), ...problems(401, 404) },
      },
    },
    async (request) => {
      if (!(await findMerchant(ctx.store, request.params.id))) throw merchantNotFound();
      return balancesOf(ctx.store, request.params.id);
    },
  );
}

function registerAdminAdjustBalance(app: App, ctx: ServiceContext): void {
  app.post(
    "/merchants/:id/balance-adjustments",
    {
      schema: {
        operationId: "AdminAdjustBalance",
        summary: "Adjust a merchant's balance (a ledger entry naming its reason)",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        body: AdjustBalanceBody,
        response: { 200: Type.Array(Balance), ...problems(400, 401, 404, 415) },
      },
    },
    async (request) => valueOrProblem(await adjustBalance(ctx, request.params.id, request.body)),
  );
}
