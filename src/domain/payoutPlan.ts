// The EVM payout planner: which of a network's queued payouts the hot wallet can cover now, oldest first, as a pure function of what the node and the database said.

/** Gas estimates are for the state the node sees now; the margin covers a change before mining (unused gas is not paid). */
export const GAS_MARGIN_PERCENT = 20n;

/** A queued payout as the planner sees it. */
export interface QueuedPayoutFacts {
  readonly requestKey: string;
  readonly amount: bigint;
  /** The token's contract, lowercased; null for the network's native coin. */
  readonly contract: string | null;
  /** Whether the destination is an address a transaction can go to (accepted before addresses were checked: maybe not). */
  readonly destinationValid: boolean;
}

/** What the node answered to a gas estimate of a payout's call. */
export type GasEstimate =
  | { readonly ok: true; readonly gas: bigint }
  | { readonly ok: false; readonly reverted: boolean };

export interface PlanInput {
  readonly queued: readonly QueuedPayoutFacts[];
  /** The hot wallet's native balance less what it promised to transactions not yet mined. */
  readonly nativeFree: bigint;
  /** Tokens promised to transactions not yet mined, by contract. */
  readonly tokensPromised: ReadonlyMap<string, bigint>;
  /** The hot wallet's token balances the node gave so far, by contract. */
  readonly tokenBalances: ReadonlyMap<string, bigint>;
  /** The gas estimates the node gave so far, by request key. */
  readonly estimates: ReadonlyMap<string, GasEstimate>;
  /** The fee cap every transaction of the batch is signed with. */
  readonly maxFeePerGas: bigint;
}

export interface PlannedPayout {
  readonly requestKey: string;
  readonly contract: string | null;
  readonly amount: bigint;
  /** The estimate with its margin: the gas limit signed. */
  readonly gas: bigint;
  /** The most it costs the wallet in native coin: its value and all its gas at the fee cap. */
  readonly cost: bigint;
}

/** A payout nothing can be sent for: it fails at once and its debit is credited back. */
export interface UnsentPayout {
  readonly requestKey: string;
  readonly status: "invalid_destination" | "rejected" | "destination_screened";
}

export type PayoutPlan =
  /** The plan needs one more fact from the node: ask, add the answer to the input, plan again. */
  | {
      readonly kind: "needs";
      readonly fact:
        | { readonly kind: "tokenBalance"; readonly contract: string }
        | { readonly kind: "estimate"; readonly requestKey: string };
      readonly unsent: readonly UnsentPayout[];
    }
  | {
      readonly kind: "plan";
      readonly planned: readonly PlannedPayout[];
      readonly unsent: readonly UnsentPayout[];
      /** Index in `queued` of the first payout the wallet cannot cover: it and those behind it wait. Null: none waits. */
      readonly waitingFrom: number | null;
      /** A gas estimate failed for another reason than a revert: the rest is planned next batch. */
      readonly stoppedEarly: boolean;
    };

/** The value a payout's transaction carries: the amount for the native coin, nothing for a token transfer. */
export function payoutValue(payout: Pick<QueuedPayoutFacts, "contract" | "amount">): bigint {
  return payout.contract === null ? payout.amount : 0n;
}

export function withGasMargin(estimate: bigint): bigint {
  return (estimate * (100n + GAS_MARGIN_PERCENT) + 99n) / 100n;
}

/**
 * Plans the queued payouts in order: a payout with an invalid destination, or whose transfer would
 * revert, fails unsent; the first the wallet cannot cover (its tokens, its value, or its value and
 * gas at the fee cap) waits, and so do all behind it: payouts leave in the order they were accepted.
 * Pure: every fact from the node is in the input, and a missing one is asked for (`needs`).
 */
export function planPayouts(input: PlanInput): PayoutPlan {
  let nativeLeft = input.nativeFree;
  const tokenLeft = new Map<string, bigint>();
  const planned: PlannedPayout[] = [];
  const unsent: UnsentPayout[] = [];
  const done = (waitingFrom: number | null, stoppedEarly = false): PayoutPlan => ({
    kind: "plan",
    planned,
    unsent,
    waitingFrom,
    stoppedEarly,
  });
  for (const [i, p] of input.queued.entries()) {
    if (!p.destinationValid) {
      unsent.push({ requestKey: p.requestKey, status: "invalid_destination" });
      continue;
    }
    if (p.contract !== null && !tokenLeft.has(p.contract)) {
      const held = input.tokenBalances.get(p.contract);
      if (held === undefined) return { kind: "needs", fact: { kind: "tokenBalance", contract: p.contract }, unsent };
      tokenLeft.set(p.contract, held - (input.tokensPromised.get(p.contract) ?? 0n));
    }
    const value = payoutValue(p);
    const tokensCovered = p.contract === null || (tokenLeft.get(p.contract) ?? 0n) >= p.amount;
    if (!tokensCovered || nativeLeft < value) return done(i);
    const estimate = input.estimates.get(p.requestKey);
    if (estimate === undefined) return { kind: "needs", fact: { kind: "estimate", requestKey: p.requestKey }, unsent };
    if (!estimate.ok) {
      // A transfer that would fail on chain (a token that refuses it): nothing is sent, the payout fails.
      if (estimate.reverted) {
        unsent.push({ requestKey: p.requestKey, status: "rejected" });
        continue;
      }
      return done(null, true);
    }
    const gas = withGasMargin(estimate.gas);
    const cost = value + gas * input.maxFeePerGas;
    if (nativeLeft < cost) return done(i);
    nativeLeft -= cost;
    if (p.contract !== null) tokenLeft.set(p.contract, (tokenLeft.get(p.contract) ?? 0n) - p.amount);
    planned.push({ requestKey: p.requestKey, contract: p.contract, amount: p.amount, gas, cost });
  }
  return done(null);
}
