// Create a withdrawal (CreateWithdrawal and the dashboard's withdraw form): the withdrawal rules, the debit and the queued payout, in the request id's transaction.
import { type Static, Type } from "typebox";
import { type Currency, symbolOf } from "../domain/currencies.ts";
import { judgeRetry, type RetryVerdict } from "../domain/idempotency.ts";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { publicWithdrawalRequest } from "../domain/payoutRequests.ts";
import { err, invariantViolation, ok, type Result } from "../domain/result.ts";
import { checkWithdrawal, REFUSAL_POINTER, type WithdrawalRefusal } from "../domain/withdrawal.ts";
import { findCurrency } from "../store/currencies.ts";
import { findMerchant, findWithdrawalMethod } from "../store/merchants.ts";
import {
  AWAITING_APPROVAL_STATUS,
  acceptPayout,
  debitMovement,
  type PayoutOrder,
  payoutRailFor,
} from "../store/payouts.ts";
import { nowIso, type Tx } from "../store/store.ts";
import {
  acceptWithdrawalInOneStatement,
  insertWithdrawal,
  type WithdrawalRecord,
  type WithdrawalView,
} from "../store/withdrawals.ts";
import type { ServiceContext } from "./context.ts";
import { payoutRailPolicy } from "./payoutProcessors.ts";
import { type IdempotentRequest, performOnceThen } from "./performOnce.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";
import { type ScreeningRefusal, screenDestination } from "./screenDestination.ts";

/** Withdrawal method ids are PostgreSQL `integer`s: larger ids cannot exist, and must not reach a query. */
const MAX_METHOD_ID = 2_147_483_647;

/** Whether an id can be a withdrawal method's (anything else is refused by the rules without a query). */
export function usableMethodId(id: unknown): id is number {
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 1 && id <= MAX_METHOD_ID;
}

export const CreateWithdrawalBody = Type.Object(
  {
    currency: Type.String({ minLength: 1, maxLength: 20, description: "Currency of the withdrawal method" }),
    amount: Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Number()], {
      description: 'Positive amount; a monetary string such as "100.5" (a JSON number is also accepted)',
    }),
    withdrawalMethodId: Type.Integer({ description: "A withdrawal method of your account" }),
  },
  { additionalProperties: false },
);

export type CreateWithdrawalFields = Static<typeof CreateWithdrawalBody>;

/** What CreateWithdrawal and the dashboard's withdraw form refuse. */
export type CreateWithdrawalRefusal =
  | WithdrawalRefusal
  | "invalid_api_key"
  | "insufficient_balance"
  | ScreeningRefusal["code"];

/**
 * Accepts a withdrawal inside its request id's transaction (performOnce): the rules of the
 * interface, the withdrawal row, the debit and its queued payout. CreateWithdrawal's ordinary path
 * and the dashboard's withdraw form both call it. A refusal (`refuse`, 400) rolls everything back.
 */
export async function createWithdrawal(
  tx: Tx,
  signed: IdempotentRequest,
  body: CreateWithdrawalFields,
  now: string,
  /** What this service pays out by: the payout's rail is chosen from it (store/payouts.ts payoutRailFor). */
  railPolicy?: PayoutRailPolicy,
): Promise<{ request: ReturnType<typeof publicWithdrawalRequest> }> {
  const decided = await decide(tx, body, signed, now);
  if (!decided.ok) {
    const detail = decided.detail ?? "The withdrawal was refused.";
    if (decided.error === "invalid_api_key") refuse(decided.error, detail, "/", null);
    refuse(decided.error, detail, REFUSAL_POINTER[decided.error]);
  }
  const { withdrawal, order, answer, view } = decided.value;
  await insertWithdrawal(tx, withdrawal);
  const accepted = await acceptPayout(tx, { ...order, railPolicy }, now);
  if (!accepted.ok) refuseInsufficientBalance(withdrawal.currency);
  if (!accepted.value.awaitingApproval) return answer;
  // Over the merchant's payout policy (product §31): still `processing`, its processor status says why it waits.
  const held = { ...view, payoutState: "awaiting_approval" as const, processorStatus: AWAITING_APPROVAL_STATUS };
  return { request: publicWithdrawalRequest(held) };
}

interface Decided {
  withdrawal: WithdrawalRecord;
  order: PayoutOrder;
  currency: Currency;
  destination: string;
  /** The answer, built from what is written, without reading it back: a new withdrawal's payout is queued. */
  answer: { request: ReturnType<typeof publicWithdrawalRequest> };
  view: WithdrawalView;
}

/**
 * The withdrawal rules (domain/withdrawal.ts) over the facts read through `tx`, and what an
 * accepted withdrawal writes. Both paths decide with this one function.
 */
async function decide(
  tx: Tx,
  body: CreateWithdrawalFields,
  signed: IdempotentRequest,
  now: string,
): Promise<Result<Decided, WithdrawalRefusal | "invalid_api_key">> {
  const { currency: ticker, amount, withdrawalMethodId } = body;
  const method = usableMethodId(withdrawalMethodId) ? await findWithdrawalMethod(tx, withdrawalMethodId) : null;
  const merchant = await findMerchant(tx, signed.merchantId);
  if (!merchant) return err("invalid_api_key", "The API key is unknown or revoked.");
  // A method belongs to one catalog entry (product §23): a withdrawal in its ticker debits that entry.
  const methodEntry = method ? await findCurrency(tx, method.currency) : null;
  const ofMethod = methodEntry !== null && [symbolOf(methodEntry), methodEntry.internalTicker].includes(ticker);
  const currency = ofMethod ? methodEntry : await findCurrency(tx, ticker);
  const decision = checkWithdrawal({
    merchantId: signed.merchantId,
    merchantStatus: merchant.status,
    method,
    now,
    requestedCurrency: ofMethod && method ? method.currency : ticker,
    currency,
    amount,
  });
  if (!decision.ok) return decision;
  if (!method || !currency) throw invariantViolation("an accepted withdrawal has its method and currency");
  const withdrawal: WithdrawalRecord = {
    requestKey: signed.requestKey,
    merchantId: signed.merchantId,
    withdrawalMethodId: method.id,
    currency: currency.ticker,
    amountMinor: decision.value.amountMinor,
    createdAt: now,
  };
  const order: PayoutOrder = {
    requestKey: signed.requestKey,
    operation: "withdrawal",
    merchantId: signed.merchantId,
    cause: "withdrawal",
    debit: { currency: currency.ticker, amount: decision.value.amountMinor },
    payout: { currency: currency.ticker, amount: decision.value.amountMinor, destination: method.address },
    memo: `withdrawal to method ${method.id}`,
  };
  const view: WithdrawalView = {
    ...withdrawal,
    requestIdSent: signed.requestIdSent,
    ticker: symbolOf(currency),
    decimals: currency.decimals,
    payoutState: "queued",
    processorStatus: null,
    processorTxId: null,
    updatedAt: now,
  };
  return ok({
    withdrawal,
    order,
    currency,
    destination: method.address,
    answer: { request: publicWithdrawalRequest(view) },
    view,
  });
}

function refuseInsufficientBalance(ticker: string): never {
  return refuse("insufficient_balance", `The available ${ticker} balance does not cover this withdrawal.`, "/amount");
}

/**
 * PostgreSQL: the withdrawal decided on facts read through the store's cache (no query when they
 * are cached) and written by ONE statement (accept_withdrawal, migration 016), one round trip and
 * one commit. Null sends the request to the ordinary path, which claims the request id first and
 * reads every fact in its transaction: when the domain refuses (so that a replayed id still
 * answers its original response before any refusal), when a fact changed since it was cached, and
 * when another transaction holds the request id (the ordinary path waits for it).
 */
export async function acceptInOneStatement(
  ctx: ServiceContext,
  body: CreateWithdrawalFields,
  signed: IdempotentRequest,
): Promise<RetryVerdict | null> {
  const now = nowIso();
  const decided = await decide(ctx.store, body, signed, now);
  if (!decided.ok) return null;
  const { withdrawal, order, currency, destination, answer } = decided.value;
  const response = JSON.stringify(answer);
  const payout = { requestKey: order.requestKey, operation: order.operation, currency: order.payout.currency };
  const outcome = await acceptWithdrawalInOneStatement(ctx.store, {
    signed,
    withdrawal,
    destination,
    currency,
    movement: debitMovement(order),
    response,
    rail: await payoutRailFor(ctx.store, payoutRailPolicy(ctx), payout),
  });
  switch (outcome.kind) {
    case "accepted":
      return { kind: "replay", status: 200, body: response };
    case "recorded":
      return judgeRetry(outcome.recorded, signed, outcome.needsReconciliation);
    case "insufficient_balance":
      return refuseInsufficientBalance(currency.ticker);
    case "busy":
    case "stale":
    case "failed":
      return null;
  }
}

/**
 * A withdrawal to the merchant's method: its address screened before the transaction (product §21).
 * Another merchant's method, or none, is left to the withdrawal's own rules.
 */
async function screenWithdrawalMethod(
  ctx: ServiceContext,
  merchantId: string,
  withdrawalMethodId: unknown,
): Promise<ScreeningRefusal | null> {
  if (!usableMethodId(withdrawalMethodId)) return null;
  const method = await findWithdrawalMethod(ctx.store, withdrawalMethodId);
  if (method === null || method.merchantId !== merchantId) return null;
  return screenDestination(ctx, method.address, "/withdrawalMethodId");
}

/**
 * Withdraws once per request id (CreateWithdrawal and the dashboard's withdraw form): the method's
 * address screened first, outside any transaction; then, on PostgreSQL and with nothing else to
 * write, the one-statement acceptance (acceptInOneStatement), else performOnce with createWithdrawal
 * and `alsoInTx` (the dashboard's audit record) in the same transaction.
 */
export async function performWithdrawal(
  ctx: ServiceContext,
  idempotent: IdempotentRequest,
  body: CreateWithdrawalFields,
  alsoInTx?: (tx: Tx, answer: Awaited<ReturnType<typeof createWithdrawal>>) => Promise<unknown>,
): Promise<Outcome<RetryVerdict, CreateWithdrawalRefusal>> {
  const screened = await screenWithdrawalMethod(ctx, idempotent.merchantId, body.withdrawalMethodId);
  if (screened !== null) return { ok: false, refusal: screened };
  return withRefusals(async () => {
    // SQLite's group commit makes each statement a local call: the ordinary path is as quick there.
    if (ctx.store.dialect === "postgres" && alsoInTx === undefined) {
      const answered = await acceptInOneStatement(ctx, body, idempotent);
      if (answered) return answered;
    }
    const operate = (tx: Tx, r: IdempotentRequest, now: string) =>
      createWithdrawal(tx, r, body, now, payoutRailPolicy(ctx));
    return performOnceThen(ctx, idempotent, operate, alsoInTx);
  });
}
