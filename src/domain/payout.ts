// Payout state machine: the outgoing transfer that carries out a withdrawal or a refund, as a table of allowed transitions.
import { transition } from "./stateTable.ts";

export const PAYOUT_STATES = ["queued", "sending", "sent", "needs_reconciliation", "completed", "failed"] as const;
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

/** The `status` of the withdrawal or refund a payout carries out: the interface knows only these three. */
/** The status a withdrawal or refund shows for its payout's state. */
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
