// Chain payout worker: a loop that runs the EVM rail's batches (chain/payouts.ts) in live mode with the wallet set, wiring in the networks, the clock, the screening and the test crash point.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { forgetRails } from "../app/rails.ts";
import { chainPaymentSettler } from "../app/recordChainPayment.ts";
import { screenPayoutDestination } from "../app/screening.ts";
import { CHAIN_PAYOUT_DEFAULTS, type PayoutChain, runChainPayoutBatch } from "../chain/payouts.ts";
import type { RailPayer } from "../domain/payout.ts";
import { listCurrencies } from "../store/currencies.ts";
import { listNetworks } from "../store/networks.ts";
import { capInWei, findPayoutSettings } from "../store/payoutTransactions.ts";
import { type Loop, startLoop } from "./loop.ts";
import { NO_TEST_HOOKS, type TestHooks } from "./testHooks.ts";

// What tests drive directly, where they always found it.
export {
  CHAIN_PAYOUT_DEFAULTS,
  type ChainPayoutOptions,
  type CrashPoint,
  type PayoutChain,
  payoutCall,
  runChainPayoutBatch,
} from "../chain/payouts.ts";

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
        hot: wallet.hot(n.name),
        nativeCurrency: currencies.find((c) => c.network === n.name && c.contractAddress === null)?.ticker ?? null,
        maxFeePerGasWei: capInWei(settings.maxFeePerGasGwei),
        replaceAfterMs: settings.replaceAfterSeconds * 1000,
      };
    }),
  );
}

/** The EVM rail's payer: each batch pays out on every network this process pays out on (none unless live with the wallet set). */
export function evmRailPayer(ctx: ServiceContext, log: FastifyBaseLogger, hooks: TestHooks = NO_TEST_HOOKS): RailPayer {
  return {
    rail: "evm",
    payBatch: async () => {
      const chains = await payoutChainsOf(ctx);
      // A signer that did not sign (down at start, or since) is asked again: its network's payouts
      // go without a restart once it signs, and payments_signer_up shows it back.
      await ctx.wallet?.signers?.probeDown(chains.map((c) => ({ name: c.network, chainId: c.chainId })));
      return runChainPayoutBatch(ctx.store, chains, {
        now: () => new Date(),
        ...CHAIN_PAYOUT_DEFAULTS,
        rail: "evm",
        publicBaseUrl: ctx.config.publicBaseUrl,
        log,
        crashAt: hooks.payoutCrashAt,
        screenDestination: (address) => screenPayoutDestination(ctx, address),
        settlePayment: chainPaymentSettler(ctx.config.publicBaseUrl),
      });
    },
  };
}

export function startChainPayoutLoop(
  ctx: ServiceContext,
  log: FastifyBaseLogger,
  options: { autoStart: boolean; idleMs?: number; testHooks?: TestHooks },
): Loop {
  const payer = evmRailPayer(ctx, log, options.testHooks);
  return startLoop({
    name: "chainPayouts",
    idleMs: options.idleMs ?? ctx.config.chainPayoutPollMs,
    autoStart: options.autoStart,
    log,
    runBatch: async () => {
      const moved = await payer.payBatch();
      // A factory deployment settled in the batch opens its network: the next request reads the rails again.
      if (moved > 0) forgetRails(ctx);
      return moved;
    },
  });
}
