// How far the hot wallet's gas goes on a network (issue 50): its native coin less what transactions in flight were promised, counted in flushes and token payouts at the fee it would sign with now.
import { QUEUED_TOKEN_PAYOUT_GAS } from "./hotTransaction.ts";

/**
 * Gas assumed for one flush: a batch of one deposit whose forwarder is deployed on the way
 * (89,902 measured, docs/forwarders.md "Gas figures"), plus the flusher's 20% headroom over the
 * node's estimate. A bigger batch costs more in all and less per deposit.
 */
export const FLUSH_GAS_ASSUMED = 108_000n;

/** Gas assumed for one payout: the bound the outbox holds back for a queued token payout. */
export const PAYOUT_GAS_ASSUMED = QUEUED_TOKEN_PAYOUT_GAS;

export interface GasRunway {
  /** The hot wallet's native coin, in wei. */
  readonly balanceWei: bigint;
  /** What transactions in flight may still spend of it (per nonce, the dearest's value and gas × max fee). */
  readonly promisedWei: bigint;
  /** balanceWei less promisedWei, never below 0. */
  readonly freeWei: bigint;
  /** The max fee per gas a transaction would be signed with now (the node's, within the operator's cap). */
  readonly maxFeePerGasWei: bigint;
  readonly flushesCovered: bigint;
  readonly payoutsCovered: bigint;
}

/** The runway of `balance` once `promised` is spent, at `maxFeePerGas` (a fee of 0 counts as 1 wei: no division by it). */
export function gasRunway(balance: bigint, promised: bigint, maxFeePerGas: bigint): GasRunway {
  const free = balance > promised ? balance - promised : 0n;
  const fee = maxFeePerGas > 0n ? maxFeePerGas : 1n;
  return {
    balanceWei: balance,
    promisedWei: promised,
    freeWei: free,
    maxFeePerGasWei: maxFeePerGas,
    flushesCovered: free / (FLUSH_GAS_ASSUMED * fee),
    payoutsCovered: free / (PAYOUT_GAS_ASSUMED * fee),
  };
}
