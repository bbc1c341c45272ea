// Rules of the hot wallet's outbox (product §26): every transaction it signs, whatever its purpose, as one state table; when one counts as not mined in time; the fee bump of a replacement; and what the wallet has promised.
import { assert, err, ok, type Result } from "./result.ts";
import { transition } from "./stateTable.ts";

/**
 * What a hot-wallet transaction is for. Each purpose plans its transactions and settles them once
 * one is final; the outbox (src/chain/outbox.ts) does everything in between, the same for all.
 */
export const HOT_TX_PURPOSES = ["payout", "flush", "funding", "deployment", "fill", "submission"] as const;
export type HotTxPurpose = (typeof HOT_TX_PURPOSES)[number];

export function isHotTxPurpose(value: string): value is HotTxPurpose {
  return (HOT_TX_PURPOSES as readonly string[]).includes(value);
}

/**
 * A hot-wallet transaction is one signed EVM transaction of the hot wallet carrying out one
 * purpose's work. Several may share that work and a nonce (a replacement chain); at most one of
 * them is ever mined.
 */
export const HOT_TX_STATES = ["signed", "broadcast", "dropped", "mined", "confirmed", "reverted", "replaced"] as const;
export type HotTxState = (typeof HOT_TX_STATES)[number];

const LOST_NONCE =
  "another transaction at its nonce was mined: one of the same work's (confirmed), or one the service did not store (the purpose decides: a payout then needs reconciliation, a flush's deposits wait for another)";

export interface HotTxTransition {
  readonly from: HotTxState;
  readonly to: HotTxState;
  readonly why: string;
}

/**
 * Every allowed transition of a hot-wallet transaction, and why. Anything not listed is refused.
 * The store reads it before every write; the tests and docs/outbox.md read it too.
 */
export const HOT_TX_TRANSITIONS: readonly HotTxTransition[] = [
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
    why: LOST_NONCE,
  },
  {
    from: "broadcast",
    to: "replaced",
    why: LOST_NONCE,
  },
  {
    from: "dropped",
    to: "replaced",
    why: LOST_NONCE,
  },
];

/** The states a transaction leaves for `replaced` when another at its nonce settles (read from the table). */
export const REPLACEABLE_HOT_TX_STATES: readonly HotTxState[] = HOT_TX_TRANSITIONS.filter(
  (t) => t.to === "replaced",
).map((t) => t.from);

/** Final states: nothing leaves them. */
export const FINAL_HOT_TX_STATES: readonly HotTxState[] = ["confirmed", "reverted", "replaced"];

export function canHotTxTransition(from: HotTxState, to: HotTxState): boolean {
  return transition(HOT_TX_TRANSITIONS, from, to) !== null;
}

export function isHotTxState(value: string): value is HotTxState {
  return (HOT_TX_STATES as readonly string[]).includes(value);
}

export function isFinalHotTxState(state: HotTxState): boolean {
  return FINAL_HOT_TX_STATES.includes(state);
}

/** Still able to be mined: counts against the hot wallet's funds and may need a broadcast or a replacement. */
export function isOpenHotTxState(state: HotTxState): boolean {
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

/** What an open hot-wallet transaction promises: its nonce, its state, the coin it may spend and the tokens it carries out. */
export interface Commitment {
  readonly nonce: number;
  readonly state: HotTxState;
  readonly valueWei: bigint;
  readonly gasLimit: bigint;
  readonly fees: Fees;
  readonly tokenContract: string | null;
  readonly tokenAmount: bigint;
}

/** Native coin and tokens promised, and how many nonces hold them. */
export interface Promised {
  native: bigint;
  tokens: Map<string, bigint>;
  nonces: number;
}

/**
 * What the hot wallet has promised to its open transactions, whatever their purpose (product §26):
 * per nonce, the dearest of the transactions signed at it (whichever is mined, the wallet pays one
 * of them). A mined one is left out: the latest balance already shows it.
 */
export function promisedFunds(open: readonly Commitment[]): Promised {
  const byNonce = new Map<number, Commitment[]>();
  for (const t of open) {
    if (t.state === "mined" || isFinalHotTxState(t.state)) continue;
    byNonce.set(t.nonce, [...(byNonce.get(t.nonce) ?? []), t]);
  }
  let native = 0n;
  const tokens = new Map<string, bigint>();
  for (const group of byNonce.values()) {
    native += group.reduce((max, t) => {
      const cost = t.valueWei + worstCaseCost(t.gasLimit, t.fees);
      return cost > max ? cost : max;
    }, 0n);
    const first = group[0];
    if (first?.tokenContract && first.tokenAmount > 0n)
      tokens.set(first.tokenContract, (tokens.get(first.tokenContract) ?? 0n) + first.tokenAmount);
  }
  return { native, tokens, nonces: byNonce.size };
}

/**
 * Gas held back for a payout accepted and queued, not yet signed: a token transfer's bound (an
 * OpenZeppelin ERC-20 transfer to a fresh holder costs about 52 k) or a plain transfer's.
 */
export const QUEUED_TOKEN_PAYOUT_GAS = 100_000n;
export const QUEUED_NATIVE_PAYOUT_GAS = 21_000n;

/** A queued payout's claim on the hot wallet, in the order payouts leave. */
export interface QueuedClaim {
  readonly tokenContract: string | null;
  readonly amount: bigint;
}

/**
 * What the queued payouts hold back for themselves, in their order: each one the wallet can carry
 * (its coin and tokens free after what is promised) holds its amount and its gas bound at
 * `maxFeePerGas`. Reading stops at the first it cannot carry: payouts leave in order, and those
 * behind it wait with it; a flush (which brings coin and tokens in) never waits for them.
 */
export function queuedClaims(
  queued: readonly QueuedClaim[],
  free: { native: bigint; tokens: ReadonlyMap<string, bigint> },
  maxFeePerGas: bigint,
): { native: bigint; tokens: Map<string, bigint> } {
  let nativeLeft = free.native;
  const tokensLeft = new Map(free.tokens);
  let native = 0n;
  const tokens = new Map<string, bigint>();
  for (const q of queued) {
    const coin =
      q.tokenContract === null
        ? q.amount + QUEUED_NATIVE_PAYOUT_GAS * maxFeePerGas
        : QUEUED_TOKEN_PAYOUT_GAS * maxFeePerGas;
    const tokenLeft = q.tokenContract === null ? 0n : (tokensLeft.get(q.tokenContract) ?? 0n);
    if (nativeLeft < coin || (q.tokenContract !== null && tokenLeft < q.amount)) break;
    nativeLeft -= coin;
    native += coin;
    if (q.tokenContract !== null) {
      tokensLeft.set(q.tokenContract, tokenLeft - q.amount);
      tokens.set(q.tokenContract, (tokens.get(q.tokenContract) ?? 0n) + q.amount);
    }
  }
  return { native, tokens };
}

/** One transaction a use case asks the hot wallet's outbox to send (the factory's deployment; later, signed transfers). */
export interface HotTxSubmission {
  readonly purpose: HotTxPurpose;
  readonly purposeId: string;
  readonly call: { readonly to: `0x${string}`; readonly value: bigint; readonly data?: `0x${string}` };
  readonly gas: bigint;
  readonly tokens: { readonly contract: string; readonly amount: bigint } | null;
}

/**
 * Why the outbox sent nothing: the node or the signer did not answer, the wallet's coin is
 * promised to other transactions (or queued payouts), or the same work already has one in flight.
 */
export type OutboxRefusal =
  | "node_unavailable"
  | "signer_unavailable"
  | "funds_promised"
  | "in_flight"
  | "no_wallet"
  | "network_not_found";

/** The outbox as use cases see it (src/chain/hotWallet.ts builds it): they submit and follow, the outbox does the rest. */
export interface HotWalletOutbox {
  /** Signs, stores and broadcasts one transaction; answers its hash and nonce. */
  submit(
    network: string,
    request: HotTxSubmission,
  ): Promise<Result<{ hash: `0x${string}`; nonce: number }, OutboxRefusal>>;
  /** Follows the network's transactions in flight once, now (settling what is deep). */
  follow(network: string): Promise<void>;
}
