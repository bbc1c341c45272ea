// Exact money: amounts are bigint minor units of a currency; parsing and formatting follow product §3.
import { assert, err, ok, type Result } from "./result.ts";

/** Plain decimal: digits, optional fraction; one leading zero at most. */
const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)(\.([0-9]+))?$/;

/** Upper bound on integer digits of any amount we accept: keeps every value far inside NUMERIC and JSON-safe string handling. */
export const MAX_INTEGER_DIGITS = 30;

export type AmountError = "invalid_amount" | "amount_not_positive" | "amount_too_precise";

/**
 * Reads an input amount (a decimal string or a JSON number) into minor units.
 * Numbers are read through their shortest round-trip decimal form (what `String(n)` gives).
 */
export function parseAmount(input: unknown, decimals: number): Result<bigint, AmountError> {
  let text: string;
  if (typeof input === "number") {
    if (!Number.isFinite(input)) return err("invalid_amount");
    text = numberToPlainDecimal(input);
  } else if (typeof input === "string") {
    text = input;
  } else {
    return err("invalid_amount");
  }
  if (text.startsWith("-")) {
    return PLAIN_DECIMAL.test(text.slice(1)) ? err("amount_not_positive") : err("invalid_amount");
  }
  const match = PLAIN_DECIMAL.exec(text);
  if (!match) return err("invalid_amount");
  const integerPart = match[1] ?? "0";
  if (integerPart.length > MAX_INTEGER_DIGITS) return err("invalid_amount");
  const fraction = (match[3] ?? "").replace(/0+$/, "");
  if (fraction.length > decimals) return err("amount_too_precise");
  const minor = BigInt(integerPart + fraction.padEnd(decimals, "0"));
  if (minor <= 0n) return err("amount_not_positive");
  return ok(minor);
}

/** The shortest round-trip decimal form of a finite number, written without an exponent. */
export function numberToPlainDecimal(value: number): string {
  const text = String(value);
  const match = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!match) return text;
  const [, sign, whole = "", fraction = "", exponentText = "0"] = match;
  const digits = whole + fraction;
  const point = whole.length + Number(exponentText);
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** Like parseAmount but allows a leading `-` and zero is refused too: used by operator balance adjustments. */
export function parseSignedAmount(input: unknown, decimals: number): Result<bigint, AmountError> {
  if (typeof input === "string" && input.startsWith("-")) {
    const magnitude = parseAmount(input.slice(1), decimals);
    return magnitude.ok ? ok(-magnitude.value) : magnitude;
  }
  return parseAmount(input, decimals);
}

/** Formats minor units as a plain decimal: no exponent, no trailing fraction zeros, `0` below one. */
export function formatAmount(minor: bigint, decimals: number): string {
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(decimals + 1, "0");
  const integerPart = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, "");
  return `${negative ? "-" : ""}${integerPart}${fraction ? `.${fraction}` : ""}`;
}

/** A non-negative exact decimal as a fraction numerator / 10^scale (fee percents, rates). */
export interface Decimal {
  readonly units: bigint;
  readonly scale: number;
}

export function parseDecimal(text: string): Decimal | null {
  const match = PLAIN_DECIMAL.exec(text);
  if (!match) return null;
  const fraction = (match[3] ?? "").replace(/0+$/, "");
  return { units: BigInt((match[1] ?? "0") + fraction), scale: fraction.length };
}

export function formatDecimal(value: Decimal): string {
  return formatAmount(value.units, value.scale);
}

/** Integer division rounding half up (away from zero at .5 for non-negative operands). */
export function divideHalfUp(numerator: bigint, denominator: bigint): bigint {
  assert(denominator > 0n, "divideHalfUp: the denominator is positive");
  if (numerator < 0n) return -divideHalfUp(-numerator, denominator);
  return (numerator * 2n + denominator) / (denominator * 2n);
}

/** amount × percent / 100, in the same minor units, rounded half up. */
export function percentOf(amountMinor: bigint, percent: Decimal): bigint {
  return divideHalfUp(amountMinor * percent.units, 100n * 10n ** BigInt(percent.scale));
}

/**
 * Converts minor units of one currency into another through their USD rates, rounding half up
 * to the target's decimals: value × fromRate / toRate, rescaled between the decimal counts.
 */
export function convert(
  amountMinor: bigint,
  from: { decimals: number; rateUsd: Decimal },
  to: { decimals: number; rateUsd: Decimal },
): bigint {
  const numerator = amountMinor * from.rateUsd.units * 10n ** BigInt(to.rateUsd.scale) * 10n ** BigInt(to.decimals);
  const denominator = to.rateUsd.units * 10n ** BigInt(from.rateUsd.scale) * 10n ** BigInt(from.decimals);
  return divideHalfUp(numerator, denominator);
}
