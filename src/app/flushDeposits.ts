// The operator's actions on flush deposits (product §24, issue 36): list those left `failed`, and put one back to waiting, audited.
import { assert } from "../domain/result.ts";
import { type FlushDepositView, findFlushDeposit, retryFailedDeposit } from "../store/flushes.ts";
import { nowIso } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { Problem } from "./problem.ts";

/**
 * Puts the failed flush deposit of payment `paymentId` back to waiting (the next flush of its
 * network takes it, with its attempts counted afresh), recording `actor`. Idempotent: a deposit
 * already waiting (an earlier retry, a race won by another) is answered as it is, nothing written.
 * 404 flush_deposit_not_found; 409 flush_deposit_not_failed when it is in a flush or flushed.
 */
export async function retryFlushDeposit(
  ctx: ServiceContext,
  paymentId: string,
  actor: string,
): Promise<FlushDepositView> {
  return ctx.store.transaction(async (tx) => {
    const deposit = await findFlushDeposit(tx, paymentId);
    if (!deposit) throw new Problem("flush_deposit_not_found", "No flush deposit for this payment id.");
    if (deposit.state === "waiting") return deposit;
    if (deposit.state !== "failed") {
      throw new Problem(
        "flush_deposit_not_failed",
        `The deposit is ${deposit.state}: only a failed deposit can be retried.`,
      );
    }
    const now = nowIso();
    const retried = await retryFailedDeposit(tx, deposit, actor, now);
    const after = await findFlushDeposit(tx, paymentId);
    assert(after, "a flush deposit is never deleted");
    // Lost the compare-and-set: a concurrent retry won (it waits: answered as it is) or it moved on.
    if (!retried && after.state !== "waiting") {
      throw new Problem(
        "flush_deposit_not_failed",
        `The deposit is ${after.state}: only a failed deposit can be retried.`,
      );
    }
    return after;
  });
}
