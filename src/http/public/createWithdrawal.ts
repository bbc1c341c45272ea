// CreateWithdrawal: a signed operation that debits the balance and queues the payout to a registered withdrawal method.
import { Type } from "typebox";
import { checkWithdrawal, REFUSAL_POINTER } from "../../domain/withdrawal.ts";
import { findCurrency } from "../../store/currencies.ts";
import { findMerchant, findWithdrawalMethod } from "../../store/merchants.ts";
import { acceptPayout } from "../../store/payouts.ts";
import { insertWithdrawal, type WithdrawalRecord, type WithdrawalView } from "../../store/withdrawals.ts";
import type { App } from "../app.ts";
import type { ServiceContext } from "../context.ts";
import { publicWithdrawalRequest, WithdrawalResponse } from "../payoutViews.ts";
import { Problem } from "../problem.ts";
import { problems } from "../schemas.ts";
import { runSignedOperation, signedOperation } from "../signed.ts";

export const CREATE_WITHDRAWAL_PATH = "/public/v1/withdrawals/create";

/** Withdrawal method ids are PostgreSQL `integer`s: larger ids cannot exist, and must not reach a query. */
const MAX_METHOD_ID = 2_147_483_647;

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

export function registerCreateWithdrawal(app: App, ctx: ServiceContext): void {
  app.post(
    CREATE_WITHDRAWAL_PATH,
    {
      ...signedOperation(ctx, CREATE_WITHDRAWAL_PATH),
      schema: {
        operationId: "CreateWithdrawal",
        tags: ["withdrawals"],
        summary: "Withdraw balance to a registered withdrawal method (signed)",
        description:
          "Needs x-api-key, x-service-timestamp, x-service-request-id and x-service-request-signature; see docs/signed-operations.md.",
        security: [{ apiKey: [] }],
        body: CreateWithdrawalBody,
        response: { 200: WithdrawalResponse, ...problems(400, 401, 403, 409, 413, 415, 429) },
      },
    },
    async (request, reply) =>
      runSignedOperation(ctx, request, reply, async (tx, signed, now) => {
        const { currency: ticker, amount, withdrawalMethodId } = request.body;
        const methodIdUsable =
          Number.isSafeInteger(withdrawalMethodId) && withdrawalMethodId >= 1 && withdrawalMethodId <= MAX_METHOD_ID;
        const method = methodIdUsable ? await findWithdrawalMethod(tx, withdrawalMethodId) : null;
        const merchant = await findMerchant(tx, signed.merchantId);
        if (!merchant) throw new Problem("invalid_api_key", "The API key is unknown or revoked.");
        const currency = await findCurrency(tx, ticker);
        const decision = checkWithdrawal({
          merchantId: signed.merchantId,
          merchantStatus: merchant.status,
          method,
          requestedCurrency: ticker,
          currency,
          amount,
        });
        if (!decision.ok) {
          const detail = decision.detail ?? "The withdrawal was refused.";
          throw new Problem(decision.error, detail, [{ pointer: REFUSAL_POINTER[decision.error], detail }]);
        }
        if (!method || !currency)
          throw new Error("invariant violated: an accepted withdrawal has its method and currency");

        const withdrawal: WithdrawalRecord = {
          requestKey: signed.requestKey,
          merchantId: signed.merchantId,
          withdrawalMethodId: method.id,
          currency: currency.ticker,
          amountMinor: decision.value.amountMinor,
          createdAt: now,
        };
        await insertWithdrawal(tx, withdrawal);
        const accepted = await acceptPayout(
          tx,
          {
            requestKey: signed.requestKey,
            operation: "withdrawal",
            merchantId: signed.merchantId,
            cause: "withdrawal",
            debit: { currency: currency.ticker, amount: decision.value.amountMinor },
            payout: { currency: currency.ticker, amount: decision.value.amountMinor, destination: method.address },
            memo: `withdrawal to method ${method.id}`,
          },
          now,
        );
        if (!accepted.ok) {
          const detail = `The available ${currency.ticker} balance does not cover this withdrawal.`;
          throw new Problem("insufficient_balance", detail, [{ pointer: "/amount", detail }]);
        }
        // What was just written, without reading it back: a new withdrawal's payout is queued.
        const view: WithdrawalView = {
          ...withdrawal,
          requestIdSent: signed.requestIdSent,
          decimals: currency.decimals,
          payoutState: "queued",
          processorStatus: null,
          processorTxId: null,
          updatedAt: now,
        };
        return { request: publicWithdrawalRequest(view) };
      }),
  );
}
