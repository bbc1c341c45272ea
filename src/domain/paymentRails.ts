// Which rail takes a payment in a currency, and where its deposit address comes from: the gate of product §12.
import type { Currency } from "./currencies.ts";
import { isFiat } from "./currencies.ts";
import { err, ok, type Result } from "./result.ts";

/**
 * The rails this process can take payments on. Sandbox money is simulated on every catalog
 * currency; live money needs a rail that really receives it: a configured network with the wallet
 * set for crypto, a card provider for fiat.
 */
export interface PaymentRails {
  readonly mode: "sandbox" | "live";
  /** Networks (catalog `network` names) whose node is configured while the wallet is set. */
  readonly readyNetworks: ReadonlySet<string>;
  readonly cardProviderConfigured: boolean;
}

/**
 * How an invoice in a currency is paid. `sandbox`: simulated, its deposit address derived from the
 * invoice id (nobody holds its key, which is only acceptable because no real money is ever asked
 * for). `evm`: a deposit address of the wallet. `card`: no address.
 */
export type PaymentRail = "sandbox" | "evm" | "card";

/** The rails of a process that has no live rail yet: live mode takes no payment until one is configured. */
export function railsWithoutLiveNetworks(mode: "sandbox" | "live"): PaymentRails {
  return { mode, readyNetworks: new Set(), cardProviderConfigured: false };
}

/**
 * The gate (product §12): the rail that takes `currency`, or `currency_unavailable` when live mode
 * has none. CreateInvoice and EstimateFees both ask it, so an estimate is never given for an
 * invoice that could not be created.
 */
export function paymentRail(
  currency: Pick<Currency, "ticker" | "type" | "network">,
  rails: PaymentRails,
): Result<PaymentRail, "currency_unavailable"> {
  if (rails.mode === "sandbox") return ok("sandbox");
  if (isFiat(currency)) {
    return rails.cardProviderConfigured
      ? ok("card")
      : err("currency_unavailable", `${currency.ticker} cannot be paid in live mode: no card provider is configured`);
  }
  return rails.readyNetworks.has(currency.network)
    ? ok("evm")
    : err(
        "currency_unavailable",
        `${currency.ticker} cannot be paid in live mode: the ${currency.network} network is not configured with a wallet`,
      );
}
