// The payout processor interface: whatever moves a payout's money (sandbox, operator, EVM, card refund) answers send and check this way.
import type { PayoutOutcome } from "../domain/payout.ts";
import type { Payout } from "../store/payouts.ts";

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
