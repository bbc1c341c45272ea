// Client address ranges (CIDR, IPv4 and IPv6) of a scoped API key: parsing and matching, with IPv4 as IPv4-mapped IPv6 so that both spellings of one client match alike.

/** A range as a 128-bit network and mask: IPv4 a.b.c.d/n is ::ffff:a.b.c.d/(96+n). */
export interface AddressRange {
  network: bigint;
  mask: bigint;
}

const ALL = (1n << 128n) - 1n;
const MAPPED = 0xffffn << 32n;

function parseIpv4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0n;
  for (const part of parts) {
    // Decimal without leading zeros (an octal reading of 010 differs between tools).
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return null;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

/** 16-bit groups of one side of `::`; an IPv4 tail counts as two groups. */
function ipv6Groups(text: string, last: boolean): bigint[] | null {
  if (text === "") return [];
  const groups: bigint[] = [];
  const parts = text.split(":");
  for (const [i, part] of parts.entries()) {
    if (last && i === parts.length - 1 && part.includes(".")) {
      const v4 = parseIpv4(part);
      if (v4 === null) return null;
      groups.push(v4 >> 16n, v4 & 0xffffn);
    } else if (/^[0-9a-f]{1,4}$/i.test(part)) groups.push(BigInt(`0x${part}`));
    else return null;
  }
  return groups;
}

function parseIpv6(text: string): bigint | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const head = ipv6Groups(halves[0] ?? "", halves.length === 1);
  const tail = halves.length === 2 ? ipv6Groups(halves[1] ?? "", true) : [];
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<bigint>(halves.length === 2 ? missing : 0).fill(0n), ...tail];
  return groups.reduce((value, group) => (value << 16n) | group, 0n);
}

/** An address as 128 bits (IPv4 mapped), or null; a zone (`%eth0`) is ignored. */
export function parseAddress(text: string): bigint | null {
  const address = text.split("%")[0] ?? "";
  if (address.includes(":")) return parseIpv6(address);
  const v4 = parseIpv4(address);
  return v4 === null ? null : MAPPED | v4;
}

/**
 * A range in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`; a bare address is that one address),
 * or why not. Host bits must be zero: `10.1.2.3/8` is refused rather than read as `10.0.0.0/8`.
 */
export function parseRange(text: string): { ok: true; value: AddressRange } | { ok: false; detail: string } {
  const [address = "", prefix, extra] = text.trim().split("/");
  const bad = { ok: false as const, detail: `${JSON.stringify(text)} is not an address range in CIDR notation.` };
  if (extra !== undefined || address.includes("%")) return bad;
  const ipv4 = !address.includes(":");
  const value = parseAddress(address);
  const width = ipv4 ? 32 : 128;
  if (value === null || (prefix !== undefined && !/^(0|[1-9]\d{0,2})$/.test(prefix))) return bad;
  const length = prefix === undefined ? width : Number(prefix);
  if (length > width) return bad;
  const bits = BigInt(length + (128 - width));
  const mask = bits === 0n ? 0n : (ALL >> (128n - bits)) << (128n - bits);
  if ((value & mask) !== value) {
    return { ok: false, detail: `${JSON.stringify(text)} has bits set after its prefix length.` };
  }
  return { ok: true, value: { network: value, mask } };
}
