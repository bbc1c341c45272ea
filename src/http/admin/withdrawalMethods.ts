// Operator API: withdrawal methods (integer ids) that merchants withdraw to.
import { Type } from "typebox";
import { findCurrency } from "../../store/currencies.ts";
import {
  countWithdrawalMethodsLocked,
  findMerchant,
  insertWithdrawalMethod,
  listWithdrawalMethods,
  WITHDRAWAL_METHODS_PER_MERCHANT,
} from "../../store/merchants.ts";
import { nowIso } from "../../store/store.ts";
import type { App } from "../app.ts";
import type { ServiceContext } from "../context.ts";
import { Problem } from "../problem.ts";
import { Nullable, problems } from "../schemas.ts";
import { MerchantIdParams } from "./schemas.ts";

const WithdrawalMethodSchema = Type.Object(
  {
    id: Type.Integer(),
    merchantId: Type.String(),
    currency: Type.String(),
    address: Type.String(),
    label: Nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false },
);

export function registerAdminWithdrawalMethods(app: App, ctx: ServiceContext): void {
  const security = [{ adminToken: [] }];
  app.post(
    "/merchants/:id/withdrawal-methods",
    {
      schema: {
        operationId: "AdminCreateWithdrawalMethod",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        body: Type.Object(
          {
            currency: Type.String({ minLength: 1, maxLength: 20 }),
            address: Type.String({ minLength: 1, maxLength: 200 }),
            label: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: WithdrawalMethodSchema, ...problems(400, 401, 404, 409, 415) },
      },
    },
    async (request) => {
      const { currency, address, label } = request.body;
      const method = await ctx.store.transaction(async (tx) => {
        if (!(await findMerchant(tx, request.params.id)))
          throw new Problem("merchant_not_found", "No merchant with this id.");
        if (!(await findCurrency(tx, currency))) {
          throw new Problem("unknown_currency", `Unknown currency ${currency}.`, [
            { pointer: "/currency", detail: "is not a catalog ticker" },
          ]);
        }
        if ((await countWithdrawalMethodsLocked(tx, request.params.id)) >= WITHDRAWAL_METHODS_PER_MERCHANT) {
          throw new Problem(
            "withdrawal_method_limit_reached",
            `A merchant has at most ${WITHDRAWAL_METHODS_PER_MERCHANT} withdrawal methods.`,
          );
        }
        return insertWithdrawalMethod(
          tx,
          { merchantId: request.params.id, currency, address, label: label ?? null },
          nowIso(),
        );
      });
      return method;
    },
  );

  app.get(
    "/merchants/:id/withdrawal-methods",
    {
      schema: {
        operationId: "AdminListWithdrawalMethods",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: Type.Array(WithdrawalMethodSchema), ...problems(401, 404) },
      },
    },
    async (request) => {
      if (!(await findMerchant(ctx.store, request.params.id)))
        throw new Problem("merchant_not_found", "No merchant with this id.");
      return await listWithdrawalMethods(ctx.store, request.params.id);
    },
  );
}
