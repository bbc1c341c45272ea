// The screening worker's pass over customers' deposits whose sender could not be screened (product §30, §21): retried with invoice payments' backoff; cleared in aml_check → credited, listed or never answered → the operator decides.
import { afterUnavailable } from "../domain/screening.ts";
import { deferDepositScreening, depositsDueForScreening, settleDepositScreening } from "../store/depositAddresses.ts";
import { nowIso } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { creditDeposit } from "./depositDecisions.ts";
import { SCREENING_BATCH, type ScreeningLog, screenAddress, screeningRetryRule } from "./screening.ts";

/**
 * One bounded batch: each deposit whose sender is `pending` is screened (outside any transaction),
 * then settled by the answer in its own transaction. No answer is tried again with a doubling
 * delay; after the last attempt the sender stays unscreened (`unavailable`) and the deposit waits
 * in aml_check for the operator, as an invoice payment does. A confirmed deposit in aml_check whose
 * sender turns out clear is credited; one still unconfirmed is settled at confirmation by its
 * screening. Answers how many deposits it handled.
 */
export async function screenWaitingDeposits(ctx: ServiceContext, log: ScreeningLog): Promise<number> {
  const rule = screeningRetryRule(ctx);
  const due = await depositsDueForScreening(ctx.store, nowIso(), SCREENING_BATCH);
  for (const d of due) {
    const verdict = await screenAddress(ctx.screening, d.fromAddress);
    const next = verdict === "unavailable" ? afterUnavailable(d.attempts + 1, rule) : null;
    await ctx.store.transaction(async (tx) => {
      const now = nowIso();
      if (next?.kind === "retry") {
        await deferDepositScreening(tx, d, new Date(Date.parse(now) + next.delayMs).toISOString(), now);
        return;
      }
      const row = await settleDepositScreening(tx, d.id, verdict, now);
      // A fee plan that now takes it all leaves it in aml_check: the operator decides (and is refused the credit).
      if (row?.status === "aml_check" && verdict === "clear") await creditDeposit(tx, row, "aml_check", now);
    });
    if (verdict !== "clear") {
      log.warn(
        { worker: "screening", depositId: d.id, verdict, attempts: d.attempts + 1 },
        next?.kind === "retry"
          ? "deposit's sender not screened: trying again later"
          : "deposit's sender not clear: it waits in aml_check for the operator",
      );
    }
  }
  return due.length;
}
