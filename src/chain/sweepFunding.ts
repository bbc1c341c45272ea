// Gas fundings of sweeps as a purpose of the hot wallet's outbox (product §12, §19, §26): the sweep plans a funding (native coin to a token deposit address, so it can pay its sweep's gas), the outbox signs, stores, broadcasts, follows and replaces it, and this handler settles what the sweep does once it is final.
import type { Hex } from "../domain/chain.ts";
import { isOpenHotTxState } from "../domain/hotTransaction.ts";
import { type HotTransaction, hotTransactionsOf, postOperatorGas } from "../store/hotTransactions.ts";
import type { Store, Tx } from "../store/store.ts";
import { moveSweep, type Sweep } from "../store/sweeps.ts";
import {
  broadcastHotTransaction,
  crash,
  type HotChain,
  type OutboxOptions,
  queuedTokenBalances,
  storeHotTransactions,
  walletNow,
} from "./outbox.ts";
import type { HotTxHandler } from "./outboxFollowing.ts";

/** Gas of a funding: a plain transfer of the network's coin. */
export const FUNDING_GAS = 21_000n;

/**
 * Where a sweep's funding stands, from its outbox rows at the nonce of its newest one (an earlier
 * nonce lost to a foreign transaction is history): `none` (nothing signed, or every one of them
 * replaced), `open` (signed, not mined), `mined` (in a block, not yet deep), `confirmed` (deep: the
 * sweep may sign its own transfer) or `reverted`. `current` is the one that decides it.
 */
export interface FundingStatus {
  state: "none" | "open" | "mined" | "confirmed" | "reverted";
  current: HotTransaction | null;
}

export async function fundingStatusOf(tx: Tx, sweepId: string): Promise<FundingStatus> {
  const rows = await hotTransactionsOf(tx, "funding", sweepId);
  const newest = rows[rows.length - 1];
  if (newest === undefined) return { state: "none", current: null };
  const round = rows.filter((r) => r.nonce === newest.nonce);
  for (const state of ["confirmed", "reverted", "mined"] as const) {
    const found = round.find((r) => r.state === state);
    if (found) return { state, current: found };
  }
  const open = round.filter((r) => isOpenHotTxState(r.state));
  const current = open[open.length - 1];
  return current ? { state: "open", current } : { state: "none", current: null };
}

/** Whether the submission stored the funding, or why not: the sweep moved meanwhile, or the hot wallet cannot cover it. */
export type FundingSubmitted = "stored" | "moved" | "uncovered" | "node_unavailable";

/**
 * Submits the funding of `amount` to the sweep's deposit address through the outbox (reserve
 * `other`: what is promised and what queued payouts hold back stay theirs). Its claim runs in the
 * storing transaction: `fence` (the scanner lease's check), then the sweep moves pending -> funding
 * by compare-and-set; then it is broadcast (a refused broadcast is sent again by the follower).
 */
export async function submitFunding(
  store: Store,
  chain: HotChain,
  funding: { sweep: Sweep; to: Hex; amount: bigint; fence: (tx: Tx) => Promise<void> },
  options: Pick<OutboxOptions, "now" | "log" | "crashAt">,
): Promise<FundingSubmitted> {
  const [wallet, tokenBalances] = await Promise.all([walletNow(chain), queuedTokenBalances(store, chain)]);
  if (wallet === null || tokenBalances === null) return "node_unavailable";
  const at = options.now().toISOString();
  let claimed = false;
  const claim = async (tx: Tx) => {
    claimed = true;
    await funding.fence(tx);
    return moveSweep(tx, funding.sweep.id, "pending", { state: "funding", last_error: null }, at);
  };
  const request = {
    purpose: "funding" as const,
    purposeId: funding.sweep.id,
    call: { to: funding.to, value: funding.amount },
    gas: FUNDING_GAS,
    tokens: null,
    claim,
  };
  const [stored] = await storeHotTransactions(store, chain, [request], {
    wallet,
    tokenBalances,
    reserve: "other",
    at,
    log: options.log,
  });
  if (stored === undefined) return claimed ? "moved" : "uncovered";
  crash("after_sign", options);
  await broadcastHotTransaction(store, chain, stored, options);
  return "stored";
}

/**
 * What a sweep does once its funding is final (each in the outbox's settling transaction, by
 * compare-and-set from `funding`): deep and successful, it is due at once to sign its own
 * transfer (the funding's receipt, its gas, stays on the outbox row: the sweep's completion adds
 * it to the sweep's gas); reverted, its gas is the operator's at once and the sweep's next step
 * finds it (retried, failed past its bound, as before the outbox); a nonce a foreign transaction
 * took leaves the sweep `pending`, to be funded again.
 */
export function fundingHandler(nativeCurrency: string | null): HotTxHandler {
  return {
    settle: async (tx, mined, receipt, at) => {
      if (receipt.status !== "success") {
        const memo = `gas of the reverted gas funding of sweep ${mined.purposeId} (${mined.network})`;
        const posting = { cause: "sweep" as const, causeId: mined.id, kind: "gas", memo };
        await postOperatorGas(tx, posting, nativeCurrency, receipt.gasUsed * receipt.effectiveGasPrice, at);
      }
      const error = receipt.status === "success" ? null : "the gas funding transaction reverted";
      await moveSweep(tx, mined.purposeId, "funding", { next_attempt_at: at, last_error: error }, at);
    },
    lost: async (tx, group, at) => {
      const nonce = group[0]?.nonce ?? 0;
      await moveSweep(
        tx,
        group[0]?.purposeId ?? "",
        "funding",
        {
          state: "pending",
          last_error: `nonce ${nonce} was used by another transaction: signed again`,
          next_attempt_at: at,
        },
        at,
      );
    },
  };
}

/** A sweep left `funding` with nothing at its funding's nonce that can be mined (no funding stored): it is funded again. */
export function restartFunding(tx: Tx, sweep: Sweep, at: string): Promise<boolean> {
  const changes = { state: "pending", next_attempt_at: at, last_error: "no gas funding can be mined: funded again" };
  return moveSweep(tx, sweep.id, "funding", changes, at);
}
