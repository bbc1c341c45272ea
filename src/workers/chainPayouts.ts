// Chain payout worker: a loop that runs the EVM rail's batches (chain/payouts.ts) in live mode with the wallet set.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { followFactoryDeployments } from "../app/deployFactory.ts";
import { evmRailPayer } from "../chain/payouts.ts";
import { type Loop, startLoop } from "./loop.ts";

// What tests drive directly, where they always found it.
export {
  CHAIN_PAYOUT_DEFAULTS,
  type ChainPayoutOptions,
  type CrashPoint,
  type PayoutChain,
  payoutCall,
  payoutChainsOf,
  runChainPayoutBatch,
} from "../chain/payouts.ts";

export function startChainPayoutLoop(
  ctx: ServiceContext,
  log: FastifyBaseLogger,
  options: { autoStart: boolean; idleMs?: number },
): Loop {
  const payer = evmRailPayer(ctx, log);
  return startLoop({
    name: "chainPayouts",
    idleMs: options.idleMs ?? ctx.config.chainPayoutPollMs,
    autoStart: options.autoStart,
    log,
    // The factory's deployment is a hot-wallet transaction too: followed here until mined (product §24).
    runBatch: async () => (await payer.payBatch()) + (await followFactoryDeployments(ctx, log)),
  });
}
