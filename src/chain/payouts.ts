// The EVM payout rail: one bounded batch per configured network fills nonce gaps, follows the payout transactions in flight and signs what the hot wallet can cover of the rail's queued payouts.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { screenPayoutDestination } from "../app/screening.ts";
import type { RailPayer } from "../domain/payout.ts";
import { listCurrencies } from "../store/currencies.ts";
import { listNetworks } from "../store/networks.ts";
import { capInWei, findPayoutSettings } from "../store/payoutTransactions.ts";
import type { Store } from "../store/store.ts";
import { fillNonceGaps } from "./nonceGaps.ts";
import { followPayoutTransactions } from "./payoutFollowing.ts";
import { signQueuedPayouts } from "./payoutSigning.ts";
import {
  CHAIN_PAYOUT_DEFAULTS,
  type ChainPayoutOptions,
  type CrashPoint,
  type PayoutChain,
} from "./payoutTransactions.ts";

export { followPayoutTransactions } from "./payoutFollowing.ts";
export { signQueuedPayouts } from "./payoutSigning.ts";
export {
  CHAIN_PAYOUT_DEFAULTS,
  type ChainPayoutOptions,
  type CrashPoint,
  type PayoutChain,
  payoutCall,
} from "./payoutTransactions.ts";

/** One bounded batch over every network: fill nonce gaps, follow what is in flight, then sign what can go out. */
export async function runChainPayoutBatch(
  store: Store,
  chains: readonly PayoutChain[],
  options: ChainPayoutOptions,
): Promise<number> {
  let moved = 0;
  let firstFailure: unknown = null;
  // A failure on one network (or in following) keeps neither the signing nor the other networks
  // waiting; the batch fails after them, so the loop reports it.
  for (const chain of chains) {
    for (const work of [fillNonceGaps, followPayoutTransactions, signQueuedPayouts]) {
      try {
        moved += await work(store, chain, options);
      } catch (error) {
        firstFailure ??= error;
      }
    }
  }
  if (firstFailure !== null) throw firstFailure;
  return moved;
}

/** The networks this process pays out on: live mode with the wallet set, every configured network. */
export async function payoutChainsOf(ctx: ServiceContext): Promise<PayoutChain[]> {
  if (ctx.config.serviceMode !== "live" || ctx.wallet === null) return [];
  const wallet = ctx.wallet;
  const [networks, currencies] = await Promise.all([listNetworks(ctx.store, ctx.box), listCurrencies(ctx.store)]);
  return Promise.all(
    networks.map(async (n) => {
      const settings = await findPayoutSettings(ctx.store, n.name);
      return {
        network: n.name,
        chainId: n.chainId,
        confirmations: n.confirmations,
        client: ctx.chains.for(n.name, n.rpcUrl),
        hot: wallet.hot(),
        nativeCurrency: currencies.find((c) => c.network === n.name && c.contractAddress === null)?.ticker ?? null,
        maxFeePerGasWei: capInWei(settings.maxFeePerGasGwei),
        replaceAfterMs: settings.replaceAfterSeconds * 1000,
      };
    }),
  );
}

/** The crash point a test process asks for in PAYOUT_TEST_CRASH_AT; never set in production. */
export function crashPointOf(env: NodeJS.ProcessEnv): CrashPoint | null {
  const point = env.PAYOUT_TEST_CRASH_AT;
  return point === "after_sign" || point === "after_broadcast" ? point : null;
}

/** The EVM rail's payer: each batch pays out on every network this process pays out on (none unless live with the wallet set). */
export function evmRailPayer(ctx: ServiceContext, log: FastifyBaseLogger): RailPayer {
  const crashAt = crashPointOf(process.env);
  return {
    rail: "evm",
    payBatch: async () =>
      runChainPayoutBatch(ctx.store, await payoutChainsOf(ctx), {
        now: () => new Date(),
        ...CHAIN_PAYOUT_DEFAULTS,
        rail: "evm",
        publicBaseUrl: ctx.config.publicBaseUrl,
        log,
        crashAt,
        screenDestination: (address) => screenPayoutDestination(ctx, address),
      }),
  };
}
