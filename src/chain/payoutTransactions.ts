// What the EVM payout rail's steps share: the chains it pays out on (the outbox's), its options, and the call a payout makes.
import { encodeFunctionData, erc20Abi } from "viem";
import type { Hex } from "../domain/chain.ts";
import type { HotChain, OutboxOptions } from "./outbox.ts";
import type { SettleChainPayment } from "./scanner.ts";

/** One network the hot wallet pays out on: the outbox's view of it. */
export type PayoutChain = HotChain;

export type { CrashPoint } from "./crashPoints.ts";

export interface ChainPayoutOptions extends OutboxOptions {
  /** Bound on the payouts signed per network and batch. */
  batchSize: number;
  publicBaseUrl: string;
  /** Screening of a destination just before its payout is signed (product §21); none: not screened here. */
  screenDestination?: (address: string) => Promise<"clear" | "listed" | "pending">;
  /** The rail whose queued payouts are signed: the EVM rail's worker always sets it; absent, any queued payout of the network (tests). */
  rail?: "evm";
  /** How a payer's signed payment is recorded once its submission is deep (product §28); absent: none is submitted or settled here. */
  settlePayment?: SettleChainPayment;
}

export const CHAIN_PAYOUT_DEFAULTS = { batchSize: 20, maxInFlight: 64, maxReplacements: 8 } as const;

/** The call a payout transaction makes: a plain transfer, or the token's `transfer(recipient, amount)`. */
export function payoutCall(
  assetContract: string | null,
  recipient: string,
  amount: bigint,
): { to: Hex; value: bigint; data?: Hex } {
  if (assetContract === null) return { to: recipient as Hex, value: amount };
  return {
    to: assetContract as Hex,
    value: 0n,
    data: encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [recipient as Hex, amount] }),
  };
}
