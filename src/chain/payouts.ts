// The EVM payout rail: given the store, the networks (each with its client and signer) and the options with their clock, crash point and screening, one bounded batch per configured network fills nonce gaps, follows the payout transactions in flight and signs what the hot wallet can cover of the rail's queued payouts.
import type { Store } from "../store/store.ts";
import { fillNonceGaps } from "./nonceGaps.ts";
import { followPayoutTransactions } from "./payoutFollowing.ts";
import { signQueuedPayouts } from "./payoutSigning.ts";
import type { ChainPayoutOptions, PayoutChain } from "./payoutTransactions.ts";

export { followPayoutTransactions } from "./payoutFollowing.ts";
export { signQueuedPayouts } from "./payoutSigning.ts";
export {
  CHAIN_PAYOUT_DEFAULTS,
  type ChainPayoutOptions,
  type CrashPoint,
  type PayoutChain,
  payoutCall,
} from "./payoutTransactions.ts";

/** One bounded batch over every network: fill nonce gaps, follow what is in flight, then sign what can go out. */
export async function runChainPayoutBatch(
  store: Store,
  chains: readonly PayoutChain[],
  options: ChainPayoutOptions,
): Promise<number> {
  let moved = 0;
  let firstFailure: unknown = null;
  // A failure on one network (or in following) keeps neither the signing nor the other networks
  // waiting; the batch fails after them, so the loop reports it.
  for (const chain of chains) {
    for (const work of [fillNonceGaps, followPayoutTransactions, signQueuedPayouts]) {
      try {
        moved += await work(store, chain, options);
      } catch (error) {
        firstFailure ??= error;
      }
    }
  }
  if (firstFailure !== null) throw firstFailure;
  return moved;
}
