// Rules of a live payout's on-chain transactions: their states as a table, when one counts as not mined in time, and the fee bump of a replacement.
import { assert, err, ok, type Result } from "./result.ts";
import { transition } from "./stateTable.ts";

/**
 * A payout transaction is one signed EVM transaction of the hot wallet carrying out a payout.
 * Several may share a payout and a nonce (a replacement chain); at most one of them is ever mined.
 */
export const PAYOUT_TX_STATES = [
  "signed",
  "broadcast",
  "dropped",
  "mined",
  "confirmed",
  "reverted",
  "replaced",
] as const;
export type PayoutTxState = (typeof PAYOUT_TX_STATES)[number];

export interface PayoutTxTransition {
  readonly from: PayoutTxState;
  readonly to: PayoutTxState;
  readonly why: string;
}

/**
 * Every allowed transition of a payout transaction, and why. Anything not listed is refused. The
 * store reads it before every update; the tests and docs/evm-payouts.md read it too.
 */
export const PAYOUT_TX_TRANSITIONS: readonly PayoutTxTransition[] = [
  { from: "signed", to: "broadcast", why: "the node accepted the stored raw transaction (or already knew it)" },
  {
    from: "signed",
    to: "mined",
    why: "a receipt was found although no broadcast was recorded: a broadcast whose answer was lost in a crash",
  },
  { from: "broadcast", to: "mined", why: "a receipt was found: the transaction is in a block" },
  {
    from: "broadcast",
    to: "dropped",
    why: "the node no longer knows the transaction and its nonce is still unused: it is broadcast again",
  },
  { from: "dropped", to: "broadcast", why: "the same raw transaction was broadcast again and accepted" },
  { from: "dropped", to: "mined", why: "a receipt was found after all" },
  {
    from: "mined",
    to: "broadcast",
    why: "its block was reorganised away (the receipt is gone): it waits to be mined again",
  },
  { from: "mined", to: "confirmed", why: "its receipt says success and it is the network's `confirmations` deep" },
  { from: "mined", to: "reverted", why: "its receipt says failure and it is the network's `confirmations` deep" },
  {
    from: "signed",
    to: "replaced",
    why: "another transaction at its nonce was mined: one of the same payout's (confirmed), or one the service did not store (the payout then needs reconciliation)",
  },
  {
    from: "broadcast",
    to: "replaced",
    why: "another transaction at its nonce was mined: one of the same payout's (confirmed), or one the service did not store (the payout then needs reconciliation)",
  },
  {
    from: "dropped",
    to: "replaced",
    why: "another transaction at its nonce was mined: one of the same payout's (confirmed), or one the service did not store (the payout then needs reconciliation)",
  },
];

/** Final states: nothing leaves them. */
export const FINAL_PAYOUT_TX_STATES: readonly PayoutTxState[] = ["confirmed", "reverted", "replaced"];

export function canTxTransition(from: PayoutTxState, to: PayoutTxState): boolean {
  return transition(PAYOUT_TX_TRANSITIONS, from, to) !== null;
}

export function isPayoutTxState(value: string): value is PayoutTxState {
  return (PAYOUT_TX_STATES as readonly string[]).includes(value);
}

export function isFinalTxState(state: PayoutTxState): boolean {
  return FINAL_PAYOUT_TX_STATES.includes(state);
}

/** Still able to be mined: counts against the hot wallet's funds and may need a broadcast or a replacement. */
export function isOpenTxState(state: PayoutTxState): boolean {
  return state === "signed" || state === "broadcast" || state === "dropped";
}

/** EIP-1559 fees in wei. */
export interface Fees {
  readonly maxFeePerGas: bigint;
  readonly maxPriorityFeePerGas: bigint;
}

/**
 * Nodes (geth's txpool, anvil's replacement rule) accept a transaction at a used nonce only when
 * both its fee fields are at least 10% above the one it replaces.
 */
export const REPLACEMENT_BUMP_PERCENT = 10n;

function ceilPercent(value: bigint, percent: bigint): bigint {
  return (value * (100n + percent) + 99n) / 100n;
}

/**
 * The fees of a new transaction: what the node suggests, capped by the operator's maximum fee per
 * gas (the priority fee never above the maximum fee).
 */
export function initialFees(suggested: Fees, capMaxFeePerGas: bigint): Fees {
  assert(capMaxFeePerGas > 0n, "the fee cap is positive");
  const maxFeePerGas = suggested.maxFeePerGas < capMaxFeePerGas ? suggested.maxFeePerGas : capMaxFeePerGas;
  const priority = suggested.maxPriorityFeePerGas < maxFeePerGas ? suggested.maxPriorityFeePerGas : maxFeePerGas;
  return { maxFeePerGas, maxPriorityFeePerGas: priority < 0n ? 0n : priority };
}

/**
 * The fees of a replacement: each field at least 10% (rounded up) above the replaced one and at
 * least what the node suggests now, the priority fee never above the maximum fee. Refused when the
 * maximum fee would pass the operator's cap: the transaction then keeps waiting as it is.
 */
export function bumpFees(previous: Fees, suggested: Fees, capMaxFeePerGas: bigint): Result<Fees, "fee_cap_reached"> {
  const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);
  let maxFeePerGas = maxOf(ceilPercent(previous.maxFeePerGas, REPLACEMENT_BUMP_PERCENT), suggested.maxFeePerGas);
  let priority = maxOf(
    ceilPercent(previous.maxPriorityFeePerGas, REPLACEMENT_BUMP_PERCENT),
    suggested.maxPriorityFeePerGas,
  );
  // The priority fee rises by its 10% even when the suggestion is lower; the maximum fee must cover it.
  if (priority > maxFeePerGas) maxFeePerGas = priority;
  if (maxFeePerGas > capMaxFeePerGas) {
    // A replacement capped below its bump would be refused by the node as underpriced.
    const floorMax = ceilPercent(previous.maxFeePerGas, REPLACEMENT_BUMP_PERCENT);
    const floorPriority = ceilPercent(previous.maxPriorityFeePerGas, REPLACEMENT_BUMP_PERCENT);
    if (floorMax > capMaxFeePerGas || floorPriority > capMaxFeePerGas) return err("fee_cap_reached");
    maxFeePerGas = capMaxFeePerGas;
    if (priority > maxFeePerGas) priority = maxFeePerGas;
  }
  return ok({ maxFeePerGas, maxPriorityFeePerGas: priority });
}

/**
 * A broadcast transaction without a receipt counts as not mined in time once `replaceAfterMs`
 * passed since its (last) broadcast; then it is replaced at its nonce with higher fees.
 */
export function isOverdue(broadcastAt: string, now: string, replaceAfterMs: number): boolean {
  return Date.parse(now) - Date.parse(broadcastAt) >= replaceAfterMs;
}

/** Blocks on top of (and including) the one that holds a transaction; 0 before it is mined. */
export function confirmationsOf(minedBlock: bigint | null, headBlock: bigint): bigint {
  if (minedBlock === null || headBlock < minedBlock) return 0n;
  return headBlock - minedBlock + 1n;
}

/** What the hot wallet must hold to send a transaction: the most it can cost in gas, and what it carries. */
export function worstCaseCost(gasLimit: bigint, fees: Fees): bigint {
  return gasLimit * fees.maxFeePerGas;
}

/** Wei per gwei, for the operator's fee cap given in gwei. */
export const WEI_PER_GWEI = 1_000_000_000n;
