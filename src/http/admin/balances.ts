// Operator API: merchant balances and balance adjustments (the ledger's operator movements).
import { Type } from "typebox";
import { balancesOf } from "../../app/balances.ts";
import type { ServiceContext } from "../../app/context.ts";
import { newRowId } from "../../domain/ids.ts";
import { merchantAccount, movement, SYSTEM_ACCOUNTS, transfer } from "../../domain/ledger.ts";
import { parseSignedAmount } from "../../domain/money.ts";
import { resolveCurrencyName } from "../../store/currencies.ts";
import { postMovement } from "../../store/ledger.ts";
import { findMerchant } from "../../store/merchants.ts";
import { nowIso } from "../../store/store.ts";
import { Problem } from "../problem.ts";
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
        body: Type.Object(
          {
            currency: Type.String({ minLength: 1, maxLength: 40 }),
            amount: Type.String({ description: "Monetary string; a leading - takes money out", maxLength: 60 }),
            memo: Type.String({ minLength: 1, maxLength: 500 }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Array(Balance), ...problems(400, 401, 404, 415) },
      },
    },
    async (request) => {
      const { currency: ticker, amount, memo } = request.body;
      const merchantId = request.params.id;
      return ctx.store.transaction(async (tx) => {
        if (!(await findMerchant(tx, merchantId))) throw merchantNotFound();
        // An adjustment names an entry: an internalTicker, or a ticker with one entry (product §23).
        const named = await resolveCurrencyName(tx, ticker);
        if (named !== null && named.restricted === null && named.entries.length > 1) {
          throw new Problem("ambiguous_currency", `${ticker} has several entries: name one by its internalTicker.`, [
            { pointer: "/currency", detail: "names several entries" },
          ]);
        }
        const currency = named === null ? null : (named.restricted ?? named.primary);
        if (!currency) {
          throw new Problem("unknown_currency", `Unknown currency ${ticker}.`, [
            { pointer: "/currency", detail: "is not a catalog ticker" },
          ]);
        }
        const parsed = parseSignedAmount(amount, currency.decimals);
        if (!parsed.ok) {
          throw new Problem(
            parsed.error,
            `amount must be a non-zero decimal with at most ${currency.decimals} fraction digits.`,
            [{ pointer: "/amount", detail: "is not a valid adjustment" }],
          );
        }
        const merchant = merchantAccount(merchantId);
        const postings =
          parsed.value > 0n
            ? transfer(SYSTEM_ACCOUNTS.operatorAdjustments, merchant, currency.ticker, parsed.value)
            : transfer(merchant, SYSTEM_ACCOUNTS.operatorAdjustments, currency.ticker, -parsed.value);
        const posted = await postMovement(
          tx,
          movement({ cause: "adjustment", causeId: newRowId(), kind: "adjustment", memo, postings }),
          nowIso(),
        );
        if (!posted.ok) {
          throw new Problem("insufficient_balance", `The ${ticker} balance does not cover this adjustment.`);
        }
        return balancesOf(tx, merchantId);
      });
    },
  );
}
