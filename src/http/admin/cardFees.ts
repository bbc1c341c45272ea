// GET /admin/v1/reports/card-fees: the card provider's fees the operator bore (product §20), summed per currency.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { providerDecimals } from "../../domain/cardProvider.ts";
import { formatAmount } from "../../domain/money.ts";
import { cardFeeTotals } from "../../store/cardFees.ts";
import { findCurrency } from "../../store/currencies.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

const CardFeeTotalSchema = Type.Object(
  {
    /** The currency the provider charged its fees in (its account's settlement currency). */
    currency: Type.String(),
    /** What the provider kept less what it gave back; negative only if it gave back more. */
    fees: Type.String({ pattern: "^-?(0|[1-9][0-9]*)(\\.[0-9]*[1-9])?$", examples: ["12.34"] }),
    payments: Type.Integer({ minimum: 0, description: "Card payments whose fee is booked" }),
    refunds: Type.Integer({ minimum: 0, description: "Card refunds whose balance transaction carried a fee" }),
  },
  { additionalProperties: false },
);

export function registerAdminCardFees(app: App, ctx: ServiceContext): void {
  app.get(
    "/reports/card-fees",
    {
      schema: {
        operationId: "AdminCardFees",
        tags: ["operator"],
        summary: "The card provider's fees the operator bore, per currency (ledger cause card_fee)",
        security: [{ adminToken: [] }],
        response: { 200: Type.Array(CardFeeTotalSchema), ...problems(401, 429) },
      },
    },
    async () => {
      const totals = await cardFeeTotals(ctx.store);
      return Promise.all(
        totals.map(async (t) => {
          // The ledger counts a catalog currency in the catalog's decimals, any other in the provider's.
          const decimals = (await findCurrency(ctx.store, t.currency))?.decimals ?? providerDecimals(t.currency);
          return {
            currency: t.currency,
            fees: formatAmount(t.feesMinor, decimals),
            payments: t.payments,
            refunds: t.refunds,
          };
        }),
      );
    },
  );
}
