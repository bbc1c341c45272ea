// A card dispute as the merchant API, the dashboard and the operator API show it (product §20): what is disputed, what is held, how it ended.
import { type Static, Type } from "typebox";
import { formatAmount } from "../domain/money.ts";
import type { CardDisputeRow } from "../store/cardPayments.ts";
import { listCurrencies } from "../store/currencies.ts";
import type { Tx } from "../store/store.ts";

export const DisputeSchema = Type.Object(
  {
    id: Type.String({ description: "The card provider's dispute id" }),
    invoice_id: Type.String(),
    merchant_id: Type.String(),
    currency: Type.String({ description: "The disputed payment's currency" }),
    amount: Type.String({ description: "The disputed amount" }),
    hold_currency: Type.String({ description: "The invoice's settlement currency, where the hold is" }),
    held_amount: Type.String({ description: "What the dispute holds out of the available balance while it is open" }),
    receivable_amount: Type.String({
      description: "The part of the hold the available balance did not cover: owed to the operator",
    }),
    status: Type.String({ description: "The provider's dispute status (needs_response, under_review, won, lost, …)" }),
    reason: Type.String({ description: "The provider's dispute reason" }),
    outcome: Type.Union([Type.Literal("won"), Type.Literal("lost"), Type.Null()], {
      description: "null while open; won (the hold came back) or lost (it went to the payer)",
    }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
);

export type DisputeView = Static<typeof DisputeSchema>;

/** The operator's view: the merchant's, and the flag of a dispute the provider named for more than its payment. */
export const OperatorDisputeSchema = Type.Object(
  {
    ...DisputeSchema.properties,
    provider_amount: Type.Union([Type.String(), Type.Null()], {
      description:
        "The amount the provider's dispute named when it was above the payment: the dispute was capped at the payment (amount) and is the operator's to check with the provider; null otherwise",
    }),
  },
  { additionalProperties: false },
);

export type OperatorDisputeView = Static<typeof OperatorDisputeSchema>;

type Formatter = (value: string, ticker: string) => string;

async function formatter(tx: Tx): Promise<Formatter> {
  const decimals = new Map((await listCurrencies(tx)).map((c) => [c.ticker, c.decimals]));
  return (value, ticker) => formatAmount(BigInt(value), decimals.get(ticker) ?? 0);
}

/** The rows as the operator sees them. */
export async function operatorDisputeViews(tx: Tx, rows: readonly CardDisputeRow[]): Promise<OperatorDisputeView[]> {
  if (rows.length === 0) return [];
  const amount = await formatter(tx);
  return rows.map((r) => ({
    ...viewOf(r, amount),
    provider_amount: r.provider_amount === null ? null : amount(r.provider_amount, r.currency),
  }));
}

/** The rows as their views, amounts formatted with each currency's decimals. */
export async function disputeViews(tx: Tx, rows: readonly CardDisputeRow[]): Promise<DisputeView[]> {
  if (rows.length === 0) return [];
  const amount = await formatter(tx);
  return rows.map((r) => viewOf(r, amount));
}

function viewOf(r: CardDisputeRow, amount: Formatter): DisputeView {
  return {
    id: r.dispute_id,
    invoice_id: r.invoice_id,
    merchant_id: r.merchant_id,
    currency: r.currency,
    amount: amount(r.amount, r.currency),
    hold_currency: r.hold_currency,
    held_amount: amount(r.held_amount, r.hold_currency),
    receivable_amount: amount(r.receivable_amount, r.hold_currency),
    status: r.status,
    reason: r.reason,
    outcome: r.outcome === "won" || r.outcome === "lost" ? r.outcome : null,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}
