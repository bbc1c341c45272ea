// The EVM payout rail's settle handler: what a payout becomes once its outbox transaction is final (completed, or failed and credited back), when a foreign transaction took its nonce, and what it shows on the way.
import type { ChainReceipt } from "../domain/chain.ts";
import type { HotTransaction } from "../store/hotTransactions.ts";
import { findPayout, settlePayout } from "../store/payouts.ts";
import {
  lockPayoutState,
  markForeignNonce,
  postPayoutNetworkFee,
  reportPayoutProgress,
} from "../store/payoutTransactions.ts";
import type { Tx } from "../store/store.ts";
import type { HotTxProgress } from "./outbox.ts";
import type { HotTxHandler } from "./outboxFollowing.ts";

/** The payout's public processor fields while its transaction is on its way. */
export async function payoutProgress(tx: Tx, t: HotTransaction, progress: HotTxProgress, at: string): Promise<void> {
  await reportPayoutProgress(tx, t.purposeId, { processorStatus: progress, processorTxId: t.hash }, at);
}

/** The payout rail's handler of its outbox transactions; `nativeCurrency` names the gas's ledger currency (null: none in the catalog). */
export function payoutHandler(options: {
  nativeCurrency: string | null;
  publicBaseUrl: string;
  log: { warn(fields: object, message: string): void };
}): HotTxHandler {
  return {
    progress: payoutProgress,
    mayReplace: async (tx, t) => (await lockPayoutState(tx, t.purposeId)) === "sent",
    lost: async (tx, group, at) => {
      await markForeignNonce(tx, group[0]?.purposeId ?? "", group[0]?.nonce ?? 0, at);
    },
    settle: (tx, mined, receipt, at) => settleMinedPayout(tx, mined, receipt, at, options),
  };
}

/**
 * The payout's transaction is `confirmations` deep: the gas is ledgered and the payout completed,
 * or failed and its debit credited back when it reverted (compare-and-set from `sent`).
 */
async function settleMinedPayout(
  tx: Tx,
  mined: HotTransaction,
  receipt: ChainReceipt,
  at: string,
  options: Parameters<typeof payoutHandler>[0],
): Promise<void> {
  const requestKey = mined.purposeId;
  if ((await lockPayoutState(tx, requestKey)) === null) return;
  const success = receipt.status === "success";
  const payout = await findPayout(tx, requestKey);
  if (payout && options.nativeCurrency) {
    const fee = receipt.gasUsed * receipt.effectiveGasPrice;
    await postPayoutNetworkFee(tx, payout, options.nativeCurrency, fee, mined.hash, at);
  }
  const report = {
    outcome: success ? ("completed" as const) : ("failed" as const),
    processorStatus: success ? "confirmed" : "reverted",
    processorTxId: mined.hash,
  };
  const settled = await settlePayout(tx, requestKey, report, at, options.publicBaseUrl, { state: "sent" });
  if (!settled.ok) options.log.warn({ requestKey, error: settled.error }, "mined payout was settled meanwhile");
  if (!success)
    options.log.warn(
      { requestKey, hash: mined.hash },
      "payout transaction reverted: payout failed, debit credited back",
    );
}
