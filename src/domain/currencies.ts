// The default currency catalog of product §3: reference data seeded into the store on first start.
import type { Decimal } from "./money.ts";
import type { RateSource } from "./rates.ts";
import type { CatalogAuthorization } from "./walletAuthorization.ts";

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
  /** How its tokens can be paid by signature (product §28); absent: transfers only. */
  readonly authorization?: CatalogAuthorization;
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
    // Tether has no EIP-3009: its payers sign for Permit2 after approving it once.
    authorization: { kind: "permit2" },
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
    // USDC's EIP-712 domain on Ethereum (FiatTokenV2).
    authorization: { kind: "eip3009", name: "USD Coin", version: "2" },
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
  /** How its tokens can be paid by signature (product §28); null or absent: transfers only. */
  readonly authorization?: CatalogAuthorization | null;
  /** Below this many minor units a deposit to a customer's address is dust (product §30); absent or null: no minimum. */
  readonly minDepositMinor?: bigint | null;
  /**
   * The ticker this entry shares with the same currency's entries on other networks (product §23);
   * absent: `ticker`. `ticker` is the entry's own key: the shared ticker for a currency's first
   * entry, its `internalTicker` for each further network (e.g. `USDT` and `USDT_BASE`).
   */
  readonly symbol?: string;
}

/** The ticker an entry is answered and requested under (shared by its networks). */
export function symbolOf(currency: Pick<Currency, "ticker" | "symbol">): string {
  return currency.symbol ?? currency.ticker;
}

/** `minor` units of an entry with `from` decimals in `to` decimals, rounded half up (fees, product §3). */
export function rescaleHalfUp(minor: bigint, from: number, to: number): bigint {
  if (from <= to) return minor * 10n ** BigInt(to - from);
  const divisor = 10n ** BigInt(from - to);
  return (minor + divisor / 2n) / divisor;
}

/**
 * The precision of a ticker's invoices (product §23): the smallest `decimals` among its entries.
 * Invoice amounts are kept in the first entry's units (its key, the ledger's), multiples of this
 * precision's unit; a further entry may have fewer decimals than the first.
 */
export function precisionOf(entries: readonly Pick<Currency, "decimals">[]): number {
  let precision: number | null = null;
  for (const e of entries) if (precision === null || e.decimals < precision) precision = e.decimals;
  return precision ?? 0;
}

/**
 * `minor` units with `from` decimals in `to` decimals: exact upwards; downwards truncated (amounts
 * of an invoice are multiples of its precision's unit, which every entry of its ticker holds).
 */
export function inUnitsOf(minor: bigint, from: number, to: number): bigint {
  if (from <= to) return minor * 10n ** BigInt(to - from);
  return minor / 10n ** BigInt(from - to);
}

/**
 * What an invoice in a currency offered on several entries is priced with (product §23): the
 * currency's first entry (its key, whose units invoice amounts are kept in) with the highest
 * network fee among the entries offered, at the ticker's `precision` (rounded half up there),
 * fixed at creation.
 */
export function pricedOver(primary: Currency, offered: readonly Currency[], precision = primary.decimals): Currency {
  let fee = 0n;
  for (const entry of offered) {
    const scaled = rescaleHalfUp(entry.networkFeeMinor, entry.decimals, precision);
    if (scaled > fee) fee = scaled;
  }
  return offered.length === 0 ? primary : { ...primary, networkFeeMinor: inUnitsOf(fee, precision, primary.decimals) };
}

/**
 * A payment of `minor` units on an entry with `decimals` counted for an invoice of a ticker with
 * `precision` whose amounts are in `invoiceDecimals` units (its first entry's): truncated to the
 * precision, the rest (in the entry's units) is dust, the operator's (product §23).
 */
export function countedForInvoice(
  minor: bigint,
  decimals: number,
  precision: number,
  invoiceDecimals: number,
): { counted: bigint; dust: bigint } {
  const { counted, dust } = countedAtPrecision(minor, decimals, precision);
  return { counted: inUnitsOf(counted, precision, invoiceDecimals), dust };
}

/**
 * A payment of `minor` units on an entry with `decimals` counted in the currency's `precision`
 * (truncated): the rest is dust, the operator's (product §23).
 */
export function countedAtPrecision(
  minor: bigint,
  decimals: number,
  precision: number,
): { counted: bigint; dust: bigint } {
  if (decimals <= precision) return { counted: minor * 10n ** BigInt(precision - decimals), dust: 0n };
  const divisor = 10n ** BigInt(decimals - precision);
  return { counted: minor / divisor, dust: minor % divisor };
}

export function isFiat(currency: Pick<Currency, "type">): boolean {
  return currency.type === "fiat";
}
