// Decisions on a confirmed deposit that was not credited (product §30, §21): the operator clears or blocks one in aml_check, the merchant credits or refunds (refundDeposit.ts) a held one; each moves it once (compare-and-set), posts its money, records deposit.completed when credited, and is audited.
import {
  type DepositObject,
  type DepositRefundObject,
  type DepositStatus,
  depositCreditMovement,
  depositFees,
  depositParkMovement,
} from "../domain/depositAddresses.ts";
import { parseDecimal } from "../domain/money.ts";
import { assert } from "../domain/result.ts";
import { findCurrency } from "../store/currencies.ts";
import {
  type DepositRow,
  depositObject,
  depositsInStatus,
  findDeposit,
  findDepositAddressById,
  findDepositById,
  moveDeposit,
  recordDepositDecision,
} from "../store/depositAddresses.ts";
import { recordDepositEvent } from "../store/events.ts";
import { findMerchant } from "../store/merchants.ts";
import { latestDepositRefund } from "../store/refunds.ts";
import { postCredit } from "../store/settlement.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { type DepositRefund, type DepositRefundMove, refundHeldDeposit } from "./refundDeposit.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

/** What moving a deposit answers: the row after, `changed` when it left `from` meanwhile, or `fees_exceed_amount`. */
export type DepositMove = { kind: "moved"; row: DepositRow } | { kind: "changed" } | { kind: "fees_exceed_amount" };

/** What a deposit's credit needs besides its row: its address, entry and merchant. */
async function depositParties(tx: Tx, row: DepositRow) {
  const address = await findDepositAddressById(tx, row.deposit_address_id);
  const entry = await findCurrency(tx, row.currency);
  const merchant = await findMerchant(tx, row.merchant_id);
  assert(
    address !== null && entry !== null && merchant !== null,
    `deposit ${row.id} has its address, entry and merchant`,
  );
  return { address, entry, merchant };
}

/**
 * Credits a confirmed deposit still in `from` (aml_check: its money waits in incoming; held: in
 * the merchant's hold) with the fees of §4 as they are now, once (compare-and-set on its status),
 * and records `deposit.completed` with its callback. A fee plan changed since confirmation may
 * leave nothing to credit: then nothing moves.
 */
export async function creditDeposit(
  tx: Tx,
  row: DepositRow,
  from: "aml_check" | "held",
  now: string,
): Promise<DepositMove> {
  const { address, entry, merchant } = await depositParties(tx, row);
  const feePercent = parseDecimal(merchant.feePercent);
  assert(feePercent !== null, `merchant ${merchant.id} has a fee percent`);
  const amount = BigInt(row.amount);
  const fees = depositFees(amount, entry, { feePercent });
  if (fees === null) return { kind: "fees_exceed_amount" };
  const moved = await moveDeposit(
    tx,
    row.id,
    from,
    {
      status: "completed",
      merchant_fee: fees.merchantFee.toString(),
      network_fee: fees.networkFee.toString(),
      credited_amount: fees.credit.toString(),
    },
    now,
  );
  if (moved === null) return { kind: "changed" };
  const money = { depositId: row.id, merchantId: row.merchant_id, currency: entry.ticker, amount };
  await postCredit(tx, depositCreditMovement(money, fees, from === "held" ? "held" : "incoming"), now);
  const callbackUrl = address.callback_url ?? merchant.defaultCallbackUrl;
  // A held deposit whose refund expired or failed carries that refund still.
  const deposit = depositObject(moved, address, entry.decimals, await latestDepositRefund(tx, row.id));
  await recordDepositEvent(tx, "deposit.completed", deposit, { merchantId: row.merchant_id, callbackUrl, now });
  return { kind: "moved", row: moved };
}

/** Blocks a deposit in aml_check once: its money goes from incoming to the operator's screening account, never to the merchant. */
async function blockDeposit(tx: Tx, row: DepositRow, now: string): Promise<DepositMove> {
  const moved = await moveDeposit(tx, row.id, "aml_check", { status: "blocked" }, now);
  if (moved === null) return { kind: "changed" };
  const entry = await findCurrency(tx, row.currency);
  assert(entry !== null, `deposit ${row.id} has its entry`);
  const money = { depositId: row.id, merchantId: row.merchant_id, currency: entry.ticker, amount: BigInt(row.amount) };
  await postCredit(tx, depositParkMovement(money, "blocked"), now);
  return { kind: "moved", row: moved };
}

export type DepositDecisionRefusal =
  | "deposit_not_found"
  | "deposit_not_in_aml_check"
  | "deposit_not_held"
  | "deposit_fees_exceed_amount";

/** The refusal of a move that did not happen: the deposit left its status meanwhile, or nothing is left to credit. */
function refuseMove(move: Exclude<DepositMove, { kind: "moved" }>, expected: DepositStatus): never {
  if (move.kind === "fees_exceed_amount") {
    return refuse(
      "deposit_fees_exceed_amount",
      "The fees of this deposit's entry now take all of it: nothing is left to credit or refund.",
      "/",
      null,
    );
  }
  return notIn(expected, "it was decided meanwhile");
}

function notIn(expected: DepositStatus, why: string): never {
  if (expected === "aml_check") {
    return refuse("deposit_not_in_aml_check", `The deposit is not in aml_check: ${why}.`, "/", null);
  }
  return refuse("deposit_not_held", `The deposit is not held for the merchant's decision: ${why}.`, "/", null);
}

async function decidedObject(tx: Tx, row: DepositRow): Promise<DepositObject> {
  const { address, entry } = await depositParties(tx, row);
  return depositObject(row, address, entry.decimals, await latestDepositRefund(tx, row.id));
}

/**
 * The operator's screening decision on a deposit in aml_check (any merchant's): `clear` credits
 * it, `block` parks it in the screening account. A second decision, or one on a deposit in another
 * status, is refused (409) and changes nothing; the decision is recorded with who made it.
 */
export async function decideDepositAml(
  ctx: ServiceContext,
  input: { depositId: string; decision: "clear" | "block"; reason: string | null; actor: string },
): Promise<Outcome<DepositObject, DepositDecisionRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const row = await findDepositById(tx, input.depositId);
      if (row === null) return refuse("deposit_not_found", "No deposit with this id.", "/", null);
      if (row.status !== "aml_check") return notIn("aml_check", `it is ${row.status}`);
      const now = nowIso();
      const move =
        input.decision === "clear" ? await creditDeposit(tx, row, "aml_check", now) : await blockDeposit(tx, row, now);
      if (move.kind !== "moved") return refuseMove(move, "aml_check");
      await recordDepositDecision(
        tx,
        {
          depositId: row.id,
          decision: input.decision,
          actor: input.actor,
          statusAfter: move.row.status as DepositStatus,
          reason: input.reason,
        },
        now,
      );
      return decidedObject(tx, move.row);
    }),
  );
}

/** What the merchant's resolve answers: the deposit; for `refund`, its new refund with the claim link. */
export type ResolvedDeposit = Omit<DepositObject, "refund"> & { refund: DepositRefundObject | DepositRefund | null };

/** The move the merchant's action makes on its held deposit (each a compare-and-set from `held`). */
async function resolveMove(
  ctx: ServiceContext,
  tx: Tx,
  input: { row: DepositRow; action: "credit" | "refund"; now: string },
): Promise<DepositMove | DepositRefundMove> {
  const { row, action, now } = input;
  if (action === "credit") return creditDeposit(tx, row, "held", now);
  const { entry, merchant } = await depositParties(tx, row);
  // Only active merchants move money out (product §7), as every refund and withdrawal.
  if (merchant.status !== "active") {
    return refuse("merchant_not_active", "The merchant account is not active; refunds are not possible.", "/", null);
  }
  return refundHeldDeposit(ctx, tx, { row, entry, now });
}

/**
 * The merchant's decision on its deposit held at a deactivated address: `credit` takes it from the
 * hold with the fees of §4; `refund` sends it back to its payer by claim link (refundHeldDeposit).
 * Once: of racing or retried decisions one moves it, the others find it moved and are refused (409).
 */
export async function resolveHeldDeposit(
  ctx: ServiceContext,
  input: {
    merchantId: string;
    depositId: string;
    action: "credit" | "refund";
    /** The dashboard's audit entry, written in the decision's transaction. */
    audit?: (tx: Tx) => Promise<unknown>;
  },
): Promise<Outcome<ResolvedDeposit, DepositDecisionRefusal | "merchant_not_active">> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const row = await findDeposit(tx, input.merchantId, input.depositId);
      if (row === null) return refuse("deposit_not_found", "No deposit with this id.", "/", null);
      if (row.status !== "held") return notIn("held", `it is ${row.status}`);
      const now = nowIso();
      const move = await resolveMove(ctx, tx, { row, action: input.action, now });
      if (move.kind !== "moved") return refuseMove(move, "held");
      await recordDepositDecision(
        tx,
        {
          depositId: row.id,
          decision: input.action,
          actor: `merchant:${input.merchantId}`,
          statusAfter: move.row.status as DepositStatus,
          reason: null,
        },
        now,
      );
      await input.audit?.(tx);
      const deposit = await decidedObject(tx, move.row);
      return "refund" in move ? { ...deposit, refund: move.refund } : deposit;
    }),
  );
}

/** The operator's queue of deposits in one status (aml_check: waiting for a screening decision), oldest first. */
export async function depositsForOperator(
  ctx: ServiceContext,
  status: DepositStatus,
  limit: number,
): Promise<DepositObject[]> {
  const rows = await depositsInStatus(ctx.store, status, limit);
  const data: DepositObject[] = [];
  for (const row of rows) data.push(await decidedObject(ctx.store, row));
  return data;
}
