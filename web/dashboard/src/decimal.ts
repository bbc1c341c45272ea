// Exact arithmetic on the API's decimal amount strings ("49.9", "0.499"): bigint, never a float.

function parts(value: string): { units: bigint; scale: number } {
  const negative = value.startsWith("-");
  const [whole = "0", fraction = ""] = value.replace(/^-/, "").split(".");
  const units = BigInt(`${whole}${fraction}` || "0");
  return { units: negative ? -units : units, scale: fraction.length };
}

function format(units: bigint, scale: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, "0");
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/** a + b, exactly, in the API's plain form (no trailing zeros). */
export function addDecimals(a: string, b: string): string {
  const x = parts(a);
  const y = parts(b);
  const scale = Math.max(x.scale, y.scale);
  const units = x.units * 10n ** BigInt(scale - x.scale) + y.units * 10n ** BigInt(scale - y.scale);
  return format(units, scale);
}
