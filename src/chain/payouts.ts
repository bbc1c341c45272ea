// The hot wallet's batch per network: given the store, the networks (each with its client and signer) and the options with their clock, crash point and screening, it fills nonce gaps, follows every outbox transaction in flight to its purpose's settlement, and signs what the hot wallet can cover of the rail's queued payouts.
import type { Store } from "../store/store.ts";
import { deploymentHandler } from "./factoryDeployment.ts";
import { flushHandler } from "./flushSettlement.ts";
import { fillHandler, fillNonceGaps } from "./nonceGaps.ts";
import { followHotTransactions, type HotTxHandlers } from "./outboxFollowing.ts";
import { payoutHandler } from "./payoutSettlement.ts";
import { signQueuedPayouts } from "./payoutSigning.ts";
import type { ChainPayoutOptions, PayoutChain } from "./payoutTransactions.ts";
import { fundingHandler } from "./sweepFunding.ts";
import { submissionHandler, submitWalletAuthorizations } from "./walletSubmissions.ts";

export { signQueuedPayouts } from "./payoutSigning.ts";
export {
  CHAIN_PAYOUT_DEFAULTS,
  type ChainPayoutOptions,
  type CrashPoint,
  type PayoutChain,
  payoutCall,
} from "./payoutTransactions.ts";

/**
 * The settle handlers of the purposes this batch follows: payouts, nonce fills, the factory's
 * deployment, flushes and sweeps' gas fundings (the scanner's flush and sweep passes follow those
 * too: settling is a compare-and-set on the outbox's rows, so either follower settles each once).
 */
export function batchHandlers(
  chain: PayoutChain,
  options: Pick<ChainPayoutOptions, "publicBaseUrl" | "log" | "settlePayment">,
): HotTxHandlers {
  const native = chain.nativeCurrency;
  const settle = options.settlePayment;
  return {
    payout: payoutHandler({ nativeCurrency: native, publicBaseUrl: options.publicBaseUrl, log: options.log }),
    fill: fillHandler(native),
    deployment: deploymentHandler(native),
    flush: flushHandler(native),
    funding: fundingHandler(native),
    // Payers' signed payments (product §28) settle as invoice payments: only where payments can be recorded.
    ...(settle === undefined ? {} : { submission: submissionHandler({ settle, nativeCurrency: native }) }),
  };
}

/** Submits the payers' accepted authorizations: only where their settlement is followed too. */
function submitAuthorizations(store: Store, chain: PayoutChain, options: ChainPayoutOptions): Promise<number> {
  if (options.settlePayment === undefined) return Promise.resolve(0);
  return submitWalletAuthorizations(store, chain, options);
}

/** Follows every outbox transaction of the network whose purpose this batch settles. */
export function followPayoutTransactions(store: Store, chain: PayoutChain, options: ChainPayoutOptions) {
  return followHotTransactions(store, chain, batchHandlers(chain, options), options);
}

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
    for (const work of [fillNonceGaps, followPayoutTransactions, signQueuedPayouts, submitAuthorizations]) {
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
