// The gate of product §12: which rail takes a currency, and that live mode never falls back to the sandbox's.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_CATALOG } from "../../src/domain/currencies.ts";
import { type PaymentRails, paymentRail, railsWithoutLiveNetworks } from "../../src/domain/paymentRails.ts";

const crypto = DEFAULT_CATALOG.filter((c) => c.type !== "fiat");
const fiat = DEFAULT_CATALOG.filter((c) => c.type === "fiat");

describe("paymentRail", () => {
  it("takes every catalog currency on the sandbox rail in sandbox mode", () => {
    for (const c of DEFAULT_CATALOG)
      expect(paymentRail(c, railsWithoutLiveNetworks("sandbox"))).toEqual({ ok: true, value: "sandbox" });
  });

  it("refuses every catalog currency in live mode until a rail is configured", () => {
    for (const c of DEFAULT_CATALOG) {
      const rail = paymentRail(c, railsWithoutLiveNetworks("live"));
      expect(rail.ok).toBe(false);
      if (!rail.ok) {
        expect(rail.error).toBe("currency_unavailable");
        expect(rail.detail).toContain(c.ticker);
      }
    }
  });

  it("opens a crypto currency only with its own network ready, and fiat only with a card provider", () => {
    const ethereum: PaymentRails = {
      mode: "live",
      readyNetworks: new Set(["ethereum"]),
      cardProviderConfigured: false,
    };
    for (const c of crypto) expect(paymentRail(c, ethereum)).toEqual({ ok: true, value: "evm" });
    for (const c of fiat) expect(paymentRail(c, ethereum).ok).toBe(false);
    const other: PaymentRails = { mode: "live", readyNetworks: new Set(["polygon"]), cardProviderConfigured: true };
    for (const c of crypto) expect(paymentRail(c, other).ok).toBe(false);
    for (const c of fiat) expect(paymentRail(c, other)).toEqual({ ok: true, value: "card" });
  });

  it("keeps a configured network without its forwarder factory closed, and says to deploy the factory", () => {
    const rails: PaymentRails = {
      mode: "live",
      readyNetworks: new Set(),
      factoryMissing: new Set(["ethereum"]),
      cardProviderConfigured: false,
    };
    const onEthereum = crypto.filter((e) => e.network === "ethereum");
    expect(onEthereum.length).toBeGreaterThan(0);
    for (const c of onEthereum) {
      const rail = paymentRail(c, rails);
      expect(rail.ok).toBe(false);
      if (!rail.ok) {
        expect(rail.error).toBe("currency_unavailable");
        expect(rail.detail).toContain("deploy the factory");
        expect(rail.detail).toContain("POST /admin/v1/networks/ethereum/factory");
      }
    }
  });

  it("never answers the sandbox rail in live mode, whatever is configured", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...DEFAULT_CATALOG),
        fc.uniqueArray(fc.constantFrom("ethereum", "card", "polygon", "base"), { maxLength: 4 }),
        fc.boolean(),
        (currency, networks, card) => {
          const rail = paymentRail(currency, {
            mode: "live",
            readyNetworks: new Set(networks),
            cardProviderConfigured: card,
          });
          if (rail.ok) expect(rail.value).not.toBe("sandbox");
          expect(rail.ok).toBe(currency.type === "fiat" ? card : (networks as string[]).includes(currency.network));
        },
      ),
    );
  });
});
