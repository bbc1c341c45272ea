// Operator API: withdrawal methods (integer ids) that merchants withdraw to: add, list, disable.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { checkPayoutDestination } from "../../domain/evmAddress.ts";
import { resolveCurrencyName } from "../../store/currencies.ts";
import {
  countWithdrawalMethodsLocked,
  disableWithdrawalMethod,
  findMerchant,
  insertWithdrawalMethod,
  listWithdrawalMethods,
  type NewWithdrawalMethod,
  WITHDRAWAL_METHODS_PER_MERCHANT,
  type WithdrawalMethod,
} from "../../store/merchants.ts";
import { nowIso, type Tx } from "../../store/store.ts";
import type { App } from "../app.ts";
import { Problem } from "../problem.ts";
import { Nullable, problems } from "../schemas.ts";
import { MerchantIdParams } from "./schemas.ts";

export const WithdrawalMethodSchema = Type.Object(
  {
    id: Type.Integer(),
    merchantId: Type.String(),
    currency: Type.String(),
    address: Type.String(),
    label: Nullable(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
    disabledAt: Nullable(Type.String({ format: "date-time", description: "Set once disabled: no new withdrawals" })),
    usableFrom: Nullable(
      Type.String({
        format: "date-time",
        description: "Takes withdrawals from this time (cooling-off); null: at once",
      }),
    ),
    addedBy: Type.Union([Type.Literal("operator"), Type.Literal("dashboard")]),
  },
  { additionalProperties: false },
);

/**
 * Adds a withdrawal method, for the operator API and the dashboard alike: the merchant exists, the
 * currency is in the catalog, the address is one of the currency's network (product §12: in live
 * mode, where a mistyped address would lose money, and always for a method added in the dashboard;
 * sandbox payouts never use an operator's address), stored checksummed, and the merchant stays
 * within its bound of methods.
 */
export async function addWithdrawalMethod(
  ctx: ServiceContext,
  tx: Tx,
  fields: NewWithdrawalMethod,
  now: string,
): Promise<WithdrawalMethod> {
  if (!(await findMerchant(tx, fields.merchantId)))
    throw new Problem("merchant_not_found", "No merchant with this id.");
  // A method belongs to one entry: an internalTicker, or a ticker with one entry (product §23).
  const named = await resolveCurrencyName(tx, fields.currency);
  if (named !== null && named.restricted === null && named.entries.length > 1) {
    throw new Problem(
      "ambiguous_currency",
      `${fields.currency} has several networks: name one by its internalTicker.`,
      [{ pointer: "/currency", detail: "names several entries" }],
    );
  }
  const currency = named === null ? null : (named.restricted ?? named.primary);
  if (!currency) {
    throw new Problem("unknown_currency", `Unknown currency ${fields.currency}.`, [
      { pointer: "/currency", detail: "is not a catalog ticker" },
    ]);
  }
  let address = fields.address;
  if (ctx.config.serviceMode === "live" || fields.addedBy === "dashboard") {
    const checked = checkPayoutDestination(currency, address.trim());
    if (!checked.ok) {
      throw new Problem(
        "invalid_address",
        `The address is not a valid ${currency.network} address: ${checked.detail}.`,
        [{ pointer: "/address", detail: checked.detail ?? "is not a valid address" }],
      );
    }
    address = checked.value;
  }
  if ((await countWithdrawalMethodsLocked(tx, fields.merchantId)) >= WITHDRAWAL_METHODS_PER_MERCHANT) {
    throw new Problem(
      "withdrawal_method_limit_reached",
      `A merchant has at most ${WITHDRAWAL_METHODS_PER_MERCHANT} withdrawal methods.`,
    );
  }
  return insertWithdrawalMethod(tx, { ...fields, currency: currency.ticker, address }, now);
}

export function registerAdminWithdrawalMethods(app: App, ctx: ServiceContext): void {
  const security = [{ adminToken: [] }];
  app.post(
    "/merchants/:id/withdrawal-methods",
    {
      schema: {
        operationId: "AdminCreateWithdrawalMethod",
        summary: "Register a withdrawal method for a merchant",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        body: Type.Object(
          {
            currency: Type.String({ minLength: 1, maxLength: 40 }),
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
      // Methods the operator adds have no cooling-off (product §14).
      return ctx.store.transaction((tx) =>
        addWithdrawalMethod(
          ctx,
          tx,
          { merchantId: request.params.id, currency, address, label: label ?? null },
          nowIso(),
        ),
      );
    },
  );

  app.get(
    "/merchants/:id/withdrawal-methods",
    {
      schema: {
        operationId: "AdminListWithdrawalMethods",
        summary: "The merchant's withdrawal methods",
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

  app.post(
    "/merchants/:id/withdrawal-methods/:methodId/disable",
    {
      schema: {
        operationId: "AdminDisableWithdrawalMethod",
        tags: ["operator"],
        security,
        summary: "Disable a withdrawal method: it takes no new withdrawal (from the API or the dashboard)",
        params: Type.Object(
          { id: MerchantIdParams.properties.id, methodId: MethodIdParam },
          { additionalProperties: false },
        ),
        response: { 200: WithdrawalMethodSchema, ...problems(401, 404) },
      },
    },
    async (request) =>
      ctx.store.transaction(async (tx) => {
        if (!(await findMerchant(tx, request.params.id)))
          throw new Problem("merchant_not_found", "No merchant with this id.");
        const method = await disableWithdrawalMethod(tx, request.params.id, Number(request.params.methodId), nowIso());
        if (!method)
          throw new Problem("withdrawal_method_unknown", "The merchant has no withdrawal method with this id.");
        return method;
      }),
  );
}

/** A withdrawal method id in a path: a positive PostgreSQL integer. */
export const MethodIdParam = Type.String({ pattern: "^[1-9][0-9]{0,8}$" });
