// Which callback URLs and destination addresses are allowed: http(s) only, and never the service's own networks in live mode.
import { BlockList, isIP } from "node:net";
import { err, ok, type Result } from "./result.ts";
import type { ServiceMode } from "./serviceMode.ts";

/** Why an address is not a public destination; null for a public one. */
export type AddressClass =
  | "metadata"
  | "unspecified"
  | "loopback"
  | "private"
  | "link_local"
  | "shared"
  | "multicast"
  | "reserved";

type Range = readonly [network: string, prefix: number];

/** Ranges per class, checked in this order (the metadata addresses lie inside link-local and private ranges). */
const RANGES: readonly (readonly [AddressClass, readonly Range[], readonly Range[]])[] = [
  // Cloud instance metadata services: credentials of the machine itself.
  ["metadata", [["169.254.169.254", 32]], [["fd00:ec2::254", 128]]],
  ["unspecified", [["0.0.0.0", 8]], [["::", 128]]],
  ["loopback", [["127.0.0.0", 8]], [["::1", 128]]],
  // RFC 1918 and RFC 4193 unique local addresses (and the deprecated site-local fec0::/10).
  [
    "private",
    [
      ["10.0.0.0", 8],
      ["172.16.0.0", 12],
      ["192.168.0.0", 16],
    ],
    [
      ["fc00::", 7],
      ["fec0::", 10],
    ],
  ],
  ["link_local", [["169.254.0.0", 16]], [["fe80::", 10]]],
  // RFC 6598 carrier-grade NAT space: inside a provider's network.
  ["shared", [["100.64.0.0", 10]], []],
  ["multicast", [["224.0.0.0", 4]], [["ff00::", 8]]],
  // IETF protocol assignments, documentation, benchmarking, future use and broadcast, discard-only.
  [
    "reserved",
    [
      ["192.0.0.0", 24],
      ["192.0.2.0", 24],
      ["198.18.0.0", 15],
      ["198.51.100.0", 24],
      ["203.0.113.0", 24],
      ["192.88.99.0", 24],
      ["240.0.0.0", 4],
    ],
    [
      ["2001:db8::", 32],
      ["3fff::", 20],
      ["100::", 64],
      // IETF protocol assignments (Teredo, ORCHID, AMT...): Teredo carries a client's IPv4 address.
      ["2001::", 23],
      // RFC 8215 local-use NAT64: the operator picks where the IPv4 address sits, so none can be
      // read back out, and a local translator reaches the service's own IPv4 networks.
      ["64:ff9b:1::", 48],
    ],
  ],
];

const LISTS: readonly (readonly [AddressClass, BlockList])[] = RANGES.map(([name, v4, v6]) => {
  const list = new BlockList();
  for (const [network, prefix] of v4) list.addSubnet(network, prefix, "ipv4");
  for (const [network, prefix] of v6) list.addSubnet(network, prefix, "ipv6");
  return [name, list] as const;
});

/** The eight 16-bit groups of an IPv6 address, or null if the text is not one. */
export function ipv6Groups(text: string): number[] | null {
  if (isIP(text) !== 6) return null;
  let address = text.toLowerCase();
  // A trailing dotted quad (::ffff:1.2.3.4) is two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    address = `${address.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = address.includes("::") ? address.split("::") : [address, undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const missing = tail === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...Array<string>(missing).fill("0"), ...right].map((g) => Number.parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

/**
 * The IPv4 address an IPv6 address carries and that a gateway would connect to: IPv4-mapped
 * (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d, RFC 2765), IPv4-compatible (::a.b.c.d),
 * NAT64 (64:ff9b::a.b.c.d), 6to4 (2002:AABB:CCDD::) and ISATAP (any prefix, ::5efe:a.b.c.d).
 */
export function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  if (g === null) return null;
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return quad(g[6]!, g[7]!);
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return quad(g[6]!, g[7]!);
  // ::/96 minus :: and ::1, which are the IPv6 unspecified and loopback addresses themselves.
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return quad(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return quad(g[6]!, g[7]!);
  if (g[0] === 0x2002) return quad(g[1]!, g[2]!);
  // ISATAP interface identifiers (RFC 5214), with the universal/local bit either way.
  if ((g[4] === 0 || g[4] === 0x200) && g[5] === 0x5efe) return quad(g[6]!, g[7]!);
  return null;
}

/** Why an IP address is not a public destination, or null when it is one. Anything that is not an IP is "reserved". */
export function classifyAddress(address: string): AddressClass | null {
  const family = isIP(address);
  if (family === 0) return "reserved";
  const type = family === 4 ? "ipv4" : "ipv6";
  for (const [name, list] of LISTS) if (list.check(address, type)) return name;
  const inner = family === 6 ? embeddedIpv4(address) : null;
  return inner === null ? null : classifyAddress(inner);
}

/** Address classes a callback may reach in each mode: merchants try the sandbox against their own localhost. */
export function addressAllowed(kind: AddressClass | null, mode: ServiceMode): boolean {
  return kind === null || (mode === "sandbox" && kind === "loopback");
}

export const CALLBACK_URL_MAX_LENGTH = 2048;

export type CallbackUrlError = "callback_url_invalid" | "callback_url_not_allowed";

/** The parsed URL of a callback, if it is an absolute http(s) URL with a host. */
export function parseCallbackUrl(text: string): Result<URL, CallbackUrlError> {
  if (text.length > CALLBACK_URL_MAX_LENGTH) {
    return err("callback_url_invalid", `A callback URL has at most ${CALLBACK_URL_MAX_LENGTH} characters.`);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return err("callback_url_invalid", "The callback URL is not an absolute URL.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return err("callback_url_invalid", "A callback URL must use http or https.");
  }
  if (url.hostname === "") return err("callback_url_invalid", "The callback URL has no host.");
  // Delivery sends the credentials decoded: a URL whose credentials cannot be decoded can never be sent.
  if (!callbackCredentials(url).ok) {
    return err("callback_url_invalid", "The callback URL's user name or password is not valid percent-encoding.");
  }
  return ok(url);
}

/**
 * The `user:password` a delivery sends for a URL with credentials (null without), decoded as HTTP
 * basic authentication needs them. Creation and delivery both go through parseCallbackUrl, which
 * refuses a URL this cannot decode, so what was accepted can always be sent.
 */
export function callbackCredentials(url: URL): Result<string | null, "callback_url_invalid"> {
  if (url.username === "" && url.password === "") return ok(null);
  try {
    return ok(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`);
  } catch {
    return err("callback_url_invalid", "invalid percent-encoding in the URL's credentials");
  }
}

/** The host of a URL as an IP literal without IPv6 brackets, or null when it is a name to resolve. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) === 0 ? null : host;
}

const DESCRIPTIONS: Record<AddressClass, string> = {
  metadata: "a cloud metadata address",
  unspecified: "an unspecified address",
  loopback: "a loopback address",
  private: "a private address",
  link_local: "a link-local address",
  shared: "a carrier-grade NAT address",
  multicast: "a multicast address",
  reserved: "a reserved address",
};

/** Checks every address a host resolved to: one forbidden address refuses the host (no mixing public and private). */
export function checkAddresses(
  host: string,
  addresses: readonly string[],
  mode: ServiceMode,
): Result<true, "callback_url_not_allowed"> {
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (!addressAllowed(kind, mode)) {
      return err(
        "callback_url_not_allowed",
        `The callback host ${host} resolves to ${address}, ${DESCRIPTIONS[kind ?? "reserved"]}; callbacks go to public addresses only.`,
      );
    }
  }
  return ok(true);
}
