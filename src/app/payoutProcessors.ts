// The processors of the hand-over rails (sandbox, operator; the card provider's is refundByCard.ts), the configuration's rail policy, and which processor serves which rail.
import { randomBytes } from "node:crypto";
import type { Config } from "../config.ts";
import type { Payout, PayoutProcessor, PayoutRail, PayoutRailPolicy, SendAnswer } from "../domain/payout.ts";
import type { ServiceContext } from "./context.ts";
import { cardRefundProcessor } from "./refundByCard.ts";

/** Processor status strings of the sandbox processor. */
export const SANDBOX_PROCESSOR_STATUS = {
  submitted: "submitted",
  completed: "confirmed",
  failed: "rejected",
} as const;

/** A transaction id of the simulated network. */
export function sandboxTxId(): string {
  return `0x${randomBytes(32).toString("hex")}`;
}

/**
 * Sandbox: accepts every payout at once and settles it as completed SANDBOX_PAYOUT_DELAY_MS after
 * it was accepted (0: never by itself). POST /sandbox/v1/payouts/{requestId}/outcome settles it earlier.
 */
export function sandboxPayoutProcessor(delayMs: number): PayoutProcessor {
  const dueAt = (payout: Payout) => new Date(Date.parse(payout.createdAt) + delayMs);
  // The simulated network holds each payout under its request key, accepted whenever it was first
  // handed over, whose outcome follows from the payout alone: asking by id answers what a
  // hand-over answered (or would have: taking a key a second time changes nothing).
  const accepted = (payout: Payout): Extract<SendAnswer, { kind: "accepted" }> => ({
    kind: "accepted",
    processorStatus: SANDBOX_PROCESSOR_STATUS.submitted,
    processorTxId: null,
    checkAt: delayMs > 0 ? dueAt(payout) : null,
  });
  return {
    name: "sandbox",
    send: async (payout) => accepted(payout),
    lookup: async (payout) => accepted(payout),
    check: async (payout, now) =>
      delayMs > 0 && now >= dueAt(payout)
        ? {
            kind: "settled",
            outcome: "completed",
            processorStatus: SANDBOX_PROCESSOR_STATUS.completed,
            processorTxId: payout.processorTxId ?? sandboxTxId(),
          }
        : {
            kind: "pending",
            processorStatus: payout.processorStatus ?? "submitted",
            checkAt: delayMs > 0 ? dueAt(payout) : null,
          },
  };
}

/**
 * Live mode without an integrated processor: payouts wait for an operator, who pays them out and
 * records the outcome with POST /admin/v1/payouts/{requestId}/outcome.
 */
export function operatorPayoutProcessor(): PayoutProcessor {
  return {
    name: "operator",
    send: async () => ({ kind: "accepted", processorStatus: "awaiting_operator", processorTxId: null, checkAt: null }),
    check: async (payout) => ({
      kind: "pending",
      processorStatus: payout.processorStatus ?? "awaiting_operator",
      checkAt: null,
    }),
  };
}

/** The processor of the rail every payout of this configuration that is not an EVM or card one takes. */
export function payoutProcessorFor(config: Config): PayoutProcessor {
  return config.serviceMode === "sandbox"
    ? sandboxPayoutProcessor(config.sandboxPayoutDelayMs)
    : operatorPayoutProcessor();
}

/** What this service pays out by, from its configuration (the rule is domain/payout.ts choosePayoutRail). */
export function payoutRailPolicy(ctx: Pick<ServiceContext, "config" | "wallet" | "cardProvider">): PayoutRailPolicy {
  const live = ctx.config.serviceMode === "live";
  return {
    mode: ctx.config.serviceMode,
    chainPayouts: live && ctx.wallet !== null,
    cardRefunds: live && ctx.cardProvider !== null,
  };
}

/** One processor per hand-over rail this service uses; the EVM rail is paid by the chain's own batch (chain/payouts.ts). */
export function handOverProcessors(ctx: ServiceContext): { rail: PayoutRail; processor: PayoutProcessor }[] {
  if (ctx.config.serviceMode === "sandbox")
    return [{ rail: "sandbox", processor: sandboxPayoutProcessor(ctx.config.sandboxPayoutDelayMs) }];
  const rails: { rail: PayoutRail; processor: PayoutProcessor }[] = [
    { rail: "operator", processor: operatorPayoutProcessor() },
  ];
  if (ctx.cardProvider !== null)
    rails.push({ rail: "card", processor: cardRefundProcessor(ctx.store, ctx.cardProvider) });
  return rails;
}
