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
  /**
   * Networks configured with the wallet set whose forwarder factory (product §24) is not recorded
   * deployed for the current hot wallet: behind the gate until the operator deploys it.
   */
  readonly factoryMissing?: ReadonlySet<string>;
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
  if (rails.readyNetworks.has(currency.network)) return ok("evm");
  if (rails.factoryMissing?.has(currency.network)) return err("currency_unavailable", factoryMissingDetail(currency));
  return err(
    "currency_unavailable",
    `${currency.ticker} cannot be paid in live mode: the ${currency.network} network is not configured with a wallet`,
  );
}

/** Why a configured network takes no live crypto yet, for the refusal and for the operator's network list. */
export function factoryMissingDetail(currency: Pick<Currency, "ticker" | "network"> | { network: string }): string {
  const what = "ticker" in currency ? `${currency.ticker} cannot be paid in live mode yet` : "live crypto is closed";
  return `${what}: the forwarder factory is not deployed on the ${currency.network} network for the current hot wallet; deploy the factory (POST /admin/v1/networks/${currency.network}/factory, or the CLI's networks deploy-factory)`;
}
