// The live-mode gate's input (product §12, §20, §24): which networks take payments now (configured, their forwarder factory deployed) (read from the database and cached briefly per process), and whether a card provider takes fiat.

import { factoryAddress } from "../domain/forwarders.ts";
import { type PaymentRails, railsWithoutLiveNetworks } from "../domain/paymentRails.ts";
import { recordedFactories } from "../store/factoryDeployments.ts";
import type { ServiceContext } from "./context.ts";

/**
 * How long a process trusts its list of configured networks. Another process's PUT
 * /admin/v1/networks reaches this one within this bound; this process's own PUT at once.
 */
export const RAILS_CACHE_MS = 2000;

const cached = new WeakMap<ServiceContext, { rails: PaymentRails; until: number }>();

/** The rails of this process: sandbox takes everything; live takes crypto on configured networks once the wallet is set. */
export async function currentRails(ctx: ServiceContext): Promise<PaymentRails> {
  const mode = ctx.config.serviceMode;
  if (mode === "sandbox") return railsWithoutLiveNetworks(mode);
  const cardProviderConfigured = ctx.cardProvider !== null;
  if (ctx.wallet === null) return { ...railsWithoutLiveNetworks(mode), cardProviderConfigured };
  const now = Date.now();
  const hit = cached.get(ctx);
  if (hit && hit.until > now) return hit.rails;
  // A network opens once the current hot wallet's factory is recorded deployed there (product §24):
  // new invoices get forwarder addresses, and there is no derived address to fall back to.
  const factory = factoryAddress(ctx.wallet.hotAddress).toLowerCase();
  const recorded = await recordedFactories(ctx.store);
  const ready = [...recorded].filter(([, f]) => f === factory).map(([name]) => name);
  const rails: PaymentRails = {
    mode,
    readyNetworks: new Set(ready),
    factoryMissing: new Set([...recorded.keys()].filter((name) => !ready.includes(name))),
    cardProviderConfigured,
  };
  cached.set(ctx, { rails, until: now + RAILS_CACHE_MS });
  return rails;
}

/** After this process changed the networks: the next request reads them again. */
export function forgetRails(ctx: ServiceContext): void {
  cached.delete(ctx);
}
