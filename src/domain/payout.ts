// Payout state machine: the outgoing transfer that carries out a withdrawal or a refund, as a table of allowed transitions; its rails and the processor interface.
import type { LedgerCause } from "./ledger.ts";
import type { ServiceMode } from "./serviceMode.ts";
import { transition } from "./stateTable.ts";

export const PAYOUT_STATES = [
  "awaiting_approval",
  "queued",
  "sending",
  "sent",
  "needs_reconciliation",
  "completed",
  "failed",
] as const;
export type PayoutState = (typeof PAYOUT_STATES)[number];

/** What a payout carries out; each kind renders its own public object and reacts to settlement. */
export const PAYOUT_OPERATIONS = ["withdrawal", "refund"] as const;
export type PayoutOperation = (typeof PAYOUT_OPERATIONS)[number];

export type PayoutOutcome = "completed" | "failed";

export interface PayoutTransition {
  readonly from: PayoutState;
  readonly to: PayoutState;
  readonly why: string;
}

/**
 * Every allowed transition, and why it happens. Anything not listed is refused. Code and tests
 * read this table; docs/signed-operations.md describes it.
 */
export const PAYOUT_TRANSITIONS: readonly PayoutTransition[] = [
  {
    from: "awaiting_approval",
    to: "queued",
    why: "the payout was over its merchant's payout policy and got the approvals it needs (product §31): its held money is released to it and a worker may now claim it",
  },
  {
    from: "awaiting_approval",
    to: "failed",
    why: "an approver rejected the payout waiting for approvals; the debit is credited back",
  },
  { from: "queued", to: "sending", why: "a worker claims the payout to hand it to the payout processor" },
  { from: "sending", to: "sent", why: "the payout processor accepted the payout" },
  {
    from: "queued",
    to: "sent",
    why: "the live chain processor signed the payout's transaction and stored it, with its nonce, in the transaction that takes the payout: it is broadcast only after that commit, and again after any crash",
  },
  {
    from: "sent",
    to: "needs_reconciliation",
    why: "the chain shows the payout's nonce used by a transaction the service did not store: whether the money left is for an operator to establish",
  },
  {
    from: "sending",
    to: "failed",
    why: "the payout processor refused the payout outright, or reports it failed while the hand-over is still in progress; the debit is credited back",
  },
  {
    from: "sending",
    to: "needs_reconciliation",
    why: "the claim's lease expired, or the hand-over ended without a clear answer: the payout may or may not have left, so it is never sent again automatically",
  },
  { from: "sent", to: "completed", why: "the payout processor reports the transfer done" },
  { from: "sent", to: "failed", why: "the payout processor reports the transfer failed; the debit is credited back" },
  {
    from: "queued",
    to: "completed",
    why: "an outcome is reported before any worker handed the payout over (sandbox simulation, or an operator who paid it by other means)",
  },
  {
    from: "queued",
    to: "failed",
    why: "an outcome is reported before any worker handed the payout over; the debit is credited back",
  },
  { from: "sending", to: "completed", why: "the outcome is reported while the hand-over is still in progress" },
  {
    from: "needs_reconciliation",
    to: "completed",
    why: "an operator (or, in the sandbox, the simulated processor) established that the transfer was done",
  },
  {
    from: "needs_reconciliation",
    to: "failed",
    why: "an operator (or the simulated processor) established that nothing left; the debit is credited back",
  },
];

export function canTransition(from: PayoutState, to: PayoutState): boolean {
  return transition(PAYOUT_TRANSITIONS, from, to) !== null;
}

/** Settled payouts are final: no transition leaves them. */
export function isSettled(state: PayoutState): state is PayoutOutcome {
  return state === "completed" || state === "failed";
}

/**
 * The `status` of the withdrawal or refund a payout carries out: the interface knows only these
 * three, so a payout awaiting approval shows `processing` (its `payout_processor_status` says
 * `awaiting_approval`, docs/payout-approvals.md).
 */
export type PublicPayoutStatus = "processing" | "completed" | "failed";

export function publicStatus(state: PayoutState): PublicPayoutStatus {
  return isSettled(state) ? state : "processing";
}

/** Every payout state a public status stands for (the inverse of publicStatus, for list filters). */
export function statesShownAs(status: PublicPayoutStatus): PayoutState[] {
  return PAYOUT_STATES.filter((state) => publicStatus(state) === status);
}

export function isPayoutState(value: string): value is PayoutState {
  return (PAYOUT_STATES as readonly string[]).includes(value);
}

export function isPayoutOperation(value: string): value is PayoutOperation {
  return (PAYOUT_OPERATIONS as readonly string[]).includes(value);
}

/**
 * The rail a payout leaves by, chosen when the payout is accepted and recorded on it: the sandbox's
 * simulated network, an operator paying by hand, the hot wallet on an EVM network, or the card
 * provider refunding a card payment. Each rail has one processor; a worker claims only its rail's payouts.
 */
export const PAYOUT_RAILS = ["sandbox", "operator", "evm", "card"] as const;
export type PayoutRail = (typeof PAYOUT_RAILS)[number];

export function isPayoutRail(value: string): value is PayoutRail {
  return (PAYOUT_RAILS as readonly string[]).includes(value);
}

/** What the rail of a payout depends on: the service's configuration and two facts of the payout. */
export interface PayoutRailFacts {
  readonly mode: ServiceMode;
  /** Live mode with the wallet set: the hot wallet pays out on the configured networks. */
  readonly chainPayouts: boolean;
  /** The payout's currency is a coin or token of a configured network. */
  readonly onConfiguredNetwork: boolean;
  /** A card provider is configured and the payout is the fiat refund of a card payment. */
  readonly cardRefund: boolean;
}

/** The configuration's part of the rule: what this service pays out by (app/payoutRails.ts reads it from the config). */
export interface PayoutRailPolicy {
  readonly mode: ServiceMode;
  readonly chainPayouts: boolean;
  /** Live mode with a card provider configured. */
  readonly cardRefunds: boolean;
}

/** The rule that picks a payout's rail (the same one that decided it before rails were recorded). */
export function choosePayoutRail(facts: PayoutRailFacts): PayoutRail {
  if (facts.mode === "sandbox") return "sandbox";
  if (facts.cardRefund) return "card";
  if (facts.chainPayouts && facts.onConfiguredNetwork) return "evm";
  return "operator";
}

/** A payout as the repository holds it (store/payouts.ts reads and writes it). */
export interface Payout {
  requestKey: string;
  operation: PayoutOperation;
  merchantId: string;
  currency: string;
  amountMinor: bigint;
  destination: string;
  ledgerCause: LedgerCause;
  state: PayoutState;
  /** Null only for a payout accepted before rails were recorded, until a worker assigns it one. */
  rail: PayoutRail | null;
  processor: string | null;
  processorStatus: string | null;
  processorTxId: string | null;
  claimToken: string | null;
  leaseUntil: string | null;
  attempts: number;
  nextCheckAt: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
  stateChangedAt: string;
  settledAt: string | null;
}

export type SendAnswer =
  | {
      readonly kind: "accepted";
      readonly processorStatus: string;
      readonly processorTxId: string | null;
      /** When to ask for the outcome; null: the outcome will be reported (sandbox or operator outcome). */
      readonly checkAt: Date | null;
    }
  /** Refused outright: nothing left, so the payout fails and the debit is credited back. */
  | { readonly kind: "refused"; readonly processorStatus: string; readonly reason: string };

export type CheckAnswer =
  | { readonly kind: "pending"; readonly processorStatus: string; readonly checkAt: Date | null }
  | {
      readonly kind: "settled";
      readonly outcome: PayoutOutcome;
      readonly processorStatus: string;
      readonly processorTxId: string | null;
    };

/**
 * A payout processor: whatever actually moves the money. `send` must treat the payout's request
 * key as its idempotency reference, but the service never relies on that: a hand-over that ends
 * without a clear answer is never repeated, it goes to reconciliation.
 */
export interface PayoutProcessor {
  readonly name: string;
  send(payout: Payout, now: Date): Promise<SendAnswer>;
  check(payout: Payout, now: Date): Promise<CheckAnswer>;
  /**
   * Only for a processor that knows every payout by its request key and takes a hand-over at most
   * once per key: what it holds for a payout whose hand-over was interrupted (the worker died
   * between claim and report). With it, such a payout is recorded as sent and then checked as usual;
   * without it, it goes to reconciliation, an operator's task.
   */
  lookup?(payout: Payout, now: Date): Promise<Extract<SendAnswer, { kind: "accepted" }>>;
}

/**
 * What pays out one rail's payouts; the workers run one per rail. A hand-over rail (sandbox,
 * operator, card) is its PayoutProcessor driven by app/handOverPayouts.ts; the EVM rail plans,
 * signs and follows the hot wallet's transactions itself (chain/payouts.ts), since a batch of them
 * shares the wallet's funds and its nonces.
 */
export interface RailPayer {
  readonly rail: PayoutRail;
  /** Moves one bounded batch of the rail's payouts; answers how many it moved. */
  payBatch(): Promise<number>;
}
