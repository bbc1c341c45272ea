// Outcomes of payouts reported by hand: the operator's reconciliation and a merchant's sandbox payout, each settled once.
import type { PayoutOutcome } from "../domain/payout.ts";
import { findPayout, type Payout, type SettleError, type SettlementReport, settlePayout } from "../store/payouts.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { SANDBOX_PROCESSOR_STATUS, sandboxTxId } from "./payoutProcessors.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

/** What recording an outcome refuses. */
export type PayoutOutcomeRefusal = "payout_not_found" | "payout_already_settled" | "payout_awaiting_approval";

/** An outcome as reported: the settled state, and the processor's transaction id when it names one. */
export interface ReportedOutcome {
  status: PayoutOutcome;
  txId?: string | undefined;
}

function refuseSettlement(error: SettleError, notFoundDetail: string): never {
  if (error === "payout_not_found") refuse("payout_not_found", notFoundDetail, "/", null);
  if (error === "payout_awaiting_approval") {
    const detail = "This payout waits for its approvers (product §31): they approve or reject it in the dashboard.";
    refuse("payout_awaiting_approval", detail, "/", null);
  }
  refuse("payout_already_settled", "This payout was already settled; its outcome cannot change.", "/", null);
}

/** Settles the payout in the running transaction; a refusal rolls it back. */
async function settle(
  ctx: ServiceContext,
  tx: Tx,
  requestKey: string,
  report: SettlementReport,
  notFoundDetail: string,
): Promise<Payout> {
  const settled = await settlePayout(tx, requestKey, report, nowIso(), ctx.config.publicBaseUrl);
  if (!settled.ok) refuseSettlement(settled.error, notFoundDetail);
  return settled.value;
}

/**
 * Records the outcome the operator established with the processor (reconciliation). `chainTxId` is
 * the hash of the payout's transaction the chain says succeeded (the HTTP layer asked the node
 * first); it wins over the operator's `txId`. A failed payout's debit is credited back. Answers the
 * settled payout.
 */
export function recordPayoutOutcome(
  ctx: ServiceContext,
  requestKey: string,
  reported: ReportedOutcome,
  chainTxId: string | null,
): Promise<Outcome<Payout, PayoutOutcomeRefusal>> {
  const { status, txId } = reported;
  const report = { outcome: status, processorStatus: `operator_${status}`, processorTxId: chainTxId ?? txId ?? null };
  return withRefusals(() =>
    ctx.store.transaction((tx) => settle(ctx, tx, requestKey, report, "No payout has this request id.")),
  );
}

/**
 * Settles a merchant's own sandbox payout as the simulated processor would; another merchant's
 * payout is refused exactly as an unknown one. A completed payout without a `txId` keeps the
 * processor's id, or gets a simulated one. `answer` reads what the caller answers in the same
 * transaction as the settlement.
 */
export function settleSandboxPayout<T>(
  ctx: ServiceContext,
  merchantId: string,
  requestKey: string,
  reported: ReportedOutcome,
  answer: (tx: Tx, settled: Payout) => Promise<T>,
): Promise<Outcome<T, PayoutOutcomeRefusal>> {
  const notFoundDetail = "No payout of yours has this request id.";
  const { status, txId } = reported;
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const payout = await findPayout(tx, requestKey);
      if (!payout || payout.merchantId !== merchantId) refuse("payout_not_found", notFoundDetail, "/", null);
      const processorTxId = txId ?? (status === "completed" ? (payout.processorTxId ?? sandboxTxId()) : null);
      const report = { outcome: status, processorStatus: SANDBOX_PROCESSOR_STATUS[status], processorTxId };
      return answer(tx, await settle(ctx, tx, requestKey, report, notFoundDetail));
    }),
  );
}
