// The operator's actions on flush deposits (product §24, issue 36): list those left `failed`, and put one back to waiting, audited.
import { assert } from "../domain/result.ts";
import { type FlushDepositView, findFlushDeposit, retryFailedDeposit } from "../store/flushes.ts";
import { nowIso } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

/**
 * Puts the failed flush deposit of payment `paymentId` back to waiting (the next flush of its
 * network takes it, with its attempts counted afresh), recording `actor`. Idempotent: a deposit
 * already waiting (an earlier retry, a race won by another) is answered as it is, nothing written.
 * Refused: flush_deposit_not_found; flush_deposit_not_failed when it is in a flush or flushed.
 */
export function retryFlushDeposit(
  ctx: ServiceContext,
  paymentId: string,
  actor: string,
): Promise<Outcome<FlushDepositView, "flush_deposit_not_found" | "flush_deposit_not_failed">> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const deposit = await findFlushDeposit(tx, paymentId);
      if (!deposit) return refuse("flush_deposit_not_found", "No flush deposit for this payment id.", "/", null);
      if (deposit.state === "waiting") return deposit;
      if (deposit.state !== "failed") refuseNotFailed(deposit.state);
      const now = nowIso();
      const retried = await retryFailedDeposit(tx, deposit, actor, now);
      const after = await findFlushDeposit(tx, paymentId);
      assert(after, "a flush deposit is never deleted");
      // Lost the compare-and-set: a concurrent retry won (it waits: answered as it is) or it moved on.
      if (!retried && after.state !== "waiting") refuseNotFailed(after.state);
      return after;
    }),
  );
}

function refuseNotFailed(state: string): never {
  return refuse(
    "flush_deposit_not_failed",
    `The deposit is ${state}: only a failed deposit can be retried.`,
    "/",
    null,
  );
}
