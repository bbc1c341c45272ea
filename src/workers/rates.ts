// The rate worker: reads every feed-sourced currency's rate now and then, so the feeds' ages in /metrics, the operator's last rates and the live rate beside each confirmed payment stay current without waiting for a quote.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { listCurrencies } from "../store/currencies.ts";
import { type Loop, startLoop } from "./loop.ts";

/** Pause between rounds of reads; each read is bounded by RATE_READ_TIMEOUT_MS, and the catalog bounds a round. */
export const RATE_REFRESH_MS = 15_000;

export function startRateLoop(ctx: ServiceContext, log: FastifyBaseLogger, autoStart: boolean): Loop {
  return startLoop({
    name: "rates",
    idleMs: RATE_REFRESH_MS,
    autoStart,
    log,
    runBatch: async () => {
      const feeds = (await listCurrencies(ctx.store)).filter((c) => c.rateSource?.kind === "chainlink");
      // Failures are counted in /metrics by the lookup itself; a round never fails as a whole for one feed.
      const answers = await Promise.all(feeds.map((c) => ctx.rates.rateFor(c)));
      const refused = answers.filter((a) => !a.ok).length;
      if (refused > 0) log.warn({ worker: "rates", refused }, "rate feeds without a usable rate");
      // Always idle afterwards: the next round is due after the pause, not at once.
      return 0;
    },
  });
}
