// The live-mode gate's input (product §12, §20): which networks take payments now (read from the database and cached briefly per process), and whether a card provider takes fiat.
import { type PaymentRails, railsWithoutLiveNetworks } from "../domain/paymentRails.ts";
import { networkNames } from "../store/networks.ts";
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
  const rails: PaymentRails = {
    mode,
    readyNetworks: new Set(await networkNames(ctx.store)),
    cardProviderConfigured,
  };
  cached.set(ctx, { rails, until: now + RAILS_CACHE_MS });
  return rails;
}

/** After this process changed the networks: the next request reads them again. */
export function forgetRails(ctx: ServiceContext): void {
  cached.delete(ctx);
}
