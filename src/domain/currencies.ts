// The default currency catalog of product §3: reference data seeded into the store on first start.
import type { Decimal } from "./money.ts";
import type { RateSource } from "./rates.ts";

export type CurrencyType = "stablecoin" | "fiat" | "token";

export interface CatalogCurrency {
  readonly ticker: string;
  readonly fullName: string;
  readonly network: string;
  readonly contractAddress: string | null;
  readonly type: CurrencyType;
  /** Path under PUBLIC_BASE_URL; answered as an absolute URL. */
  readonly icon: string;
  readonly iconDark: string;
  readonly internalTicker: string;
  readonly decimals: number;
  /** Plain decimal strings in whole units, as an operator would write them. */
  readonly networkFee: string;
  readonly withdrawalMin: string;
  readonly withdrawalMax: string;
  /** Value of one unit in USD. */
  readonly rateUsd: string;
}

function entry(ticker: string, fields: Omit<CatalogCurrency, "ticker" | "icon" | "iconDark">): CatalogCurrency {
  const slug = ticker.toLowerCase();
  return { ticker, icon: `/icons/${slug}.svg`, iconDark: `/icons/${slug}-dark.svg`, ...fields };
}

export const DEFAULT_CATALOG: readonly CatalogCurrency[] = [
  entry("USDT", {
    fullName: "Tether USD",
    network: "ethereum",
    contractAddress: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
    type: "stablecoin",
    internalTicker: "USDT_ERC20",
    decimals: 6,
    networkFee: "1",
    withdrawalMin: "10",
    withdrawalMax: "100000",
    rateUsd: "1",
  }),
  entry("USDC", {
    fullName: "USD Coin",
    network: "ethereum",
    contractAddress: "0xA0b86991c6218b36c1d19D4a2E9Eb0cE3606eB48",
    type: "stablecoin",
    internalTicker: "USDC_ERC20",
    decimals: 6,
    networkFee: "1",
    withdrawalMin: "10",
    withdrawalMax: "100000",
    rateUsd: "1",
  }),
  entry("ETH", {
    fullName: "Ether",
    network: "ethereum",
    contractAddress: null,
    type: "token",
    internalTicker: "ETH",
    decimals: 18,
    networkFee: "0.0005",
    withdrawalMin: "0.01",
    withdrawalMax: "100",
    rateUsd: "3000",
  }),
  entry("EUR", {
    fullName: "Euro",
    network: "card",
    contractAddress: null,
    type: "fiat",
    internalTicker: "EUR",
    decimals: 2,
    networkFee: "0",
    withdrawalMin: "10",
    withdrawalMax: "100000",
    rateUsd: "1.08",
  }),
  entry("USD", {
    fullName: "US Dollar",
    network: "card",
    contractAddress: null,
    type: "fiat",
    internalTicker: "USD",
    decimals: 2,
    networkFee: "0",
    withdrawalMin: "10",
    withdrawalMax: "100000",
    rateUsd: "1",
  }),
];

/** A currency as the rest of the domain uses it: amounts already in minor units. */
export interface Currency {
  readonly ticker: string;
  readonly fullName: string;
  readonly network: string;
  readonly contractAddress: string | null;
  readonly type: CurrencyType;
  readonly icon: string;
  readonly iconDark: string;
  readonly internalTicker: string;
  readonly decimals: number;
  readonly networkFeeMinor: bigint;
  readonly withdrawalMinMinor: bigint;
  readonly withdrawalMaxMinor: bigint;
  /** The operator's rate: what a `static` source quotes. */
  readonly rateUsd: Decimal;
  /** Where quotes take the rate from (product §22); absent: static. */
  readonly rateSource?: RateSource;
}

export function isFiat(currency: Pick<Currency, "type">): boolean {
  return currency.type === "fiat";
}
