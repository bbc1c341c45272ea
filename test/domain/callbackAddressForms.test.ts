// Property tests of the live SSRF filter: no IPv6 form that embeds or translates to a non-public IPv4 address is a public destination.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addressAllowed, classifyAddress } from "../../src/domain/callbackUrl.ts";

/** Non-public IPv4 ranges a gateway or translator would reach inside the service's networks. */
const BLOCKED_V4: readonly [number, number][] = [
  [0x00000000, 8],
  [0x0a000000, 8],
  [0x7f000000, 8],
  [0xa9fe0000, 16],
  [0xac100000, 12],
  [0xc0a80000, 16],
  [0x64400000, 10],
  [0xe0000000, 4],
  [0xf0000000, 4],
  [0xc0000000, 24],
];

const blockedV4 = fc
  .tuple(fc.constantFrom(...BLOCKED_V4), fc.integer({ min: 0, max: 0xffffffff }))
  .map(([[network, prefix], random]) => {
    const hostMask = prefix === 0 ? 0xffffffff : (2 ** (32 - prefix) - 1) >>> 0;
    return ((network & ~hostMask) | (random & hostMask)) >>> 0;
  });

const publicV4 = fc
  .tuple(fc.constantFrom(8, 9, 11, 23, 45, 80, 93, 104, 151, 185, 212), fc.integer({ min: 0, max: 0xffffff }))
  .map(([first, rest]) => ((first << 24) | rest) >>> 0);

const dotted = (v: number) => [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff].join(".");
const hi = (v: number) => (v >>> 16).toString(16);
const lo = (v: number) => (v & 0xffff).toString(16);
const hex16 = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));

/** Every IPv6 spelling that carries the IPv4 address `v` and that a gateway, translator or tunnel would reach. */
const embeddings = (v: number) =>
  fc.oneof(
    fc.constant(`::ffff:${dotted(v)}`),
    fc.constant(`::ffff:${hi(v)}:${lo(v)}`),
    fc.constant(`0:0:0:0:0:ffff:${hi(v)}:${lo(v)}`),
    // IPv4-translated, ::ffff:0:0/96 (RFC 2765 / SIIT)
    fc.constant(`::ffff:0:${dotted(v)}`),
    fc.constant(`::ffff:0:${hi(v)}:${lo(v)}`),
    fc.constant(`0000:0000:0000:0000:FFFF:0000:${hi(v).toUpperCase()}:${lo(v).toUpperCase()}`),
    // NAT64, well-known prefix
    fc.constant(`64:ff9b::${dotted(v)}`),
    fc.constant(`64:ff9b::${hi(v)}:${lo(v)}`),
    // 6to4, with any subnet and interface
    fc.tuple(hex16, hex16).map(([subnet, iface]) => `2002:${hi(v)}:${lo(v)}:${subnet}::${iface}`),
    // ISATAP under any prefix
    fc.tuple(hex16, hex16, fc.constantFrom("0", "200")).map(([a, b, u]) => `2001:db9:${a}:${b}:${u}:5efe:${dotted(v)}`),
  );

/** Any address inside a /48 given by its three first groups. */
const inside48 = (g0: string, g1: string, g2: string) =>
  fc.array(hex16, { minLength: 5, maxLength: 5 }).map((rest) => [g0, g1, g2, ...rest].join(":"));

describe("the live filter and IPv6 forms of IPv4 addresses", () => {
  it("refuses every embedding of a non-public IPv4 address", () => {
    fc.assert(
      fc.property(
        blockedV4.chain((v) => embeddings(v).map((text) => [v, text] as const)),
        ([v, text]) => {
          const kind = classifyAddress(text);
          expect(addressAllowed(kind, "live"), `${text} (${dotted(v)}) classified ${kind}`).toBe(false);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("refuses the whole local-use NAT64 prefix 64:ff9b:1::/48, whatever IPv4 address it carries", () => {
    fc.assert(
      fc.property(inside48("64", "ff9b", "1"), (text) => {
        expect(addressAllowed(classifyAddress(text), "live"), text).toBe(false);
      }),
    );
  });

  it("refuses the IETF protocol assignments 2001::/23 (Teredo and others)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0x1ff }), inside48("2001", "0", "0"), (second, text) => {
        const address = text.replace(/^2001:0:/, `2001:${second.toString(16)}:`);
        expect(addressAllowed(classifyAddress(address), "live"), address).toBe(false);
      }),
    );
  });

  it("still allows public IPv4 addresses in mapped, translated and NAT64 forms", () => {
    fc.assert(
      fc.property(publicV4, (v) => {
        for (const text of [`::ffff:${dotted(v)}`, `::ffff:0:${dotted(v)}`, `64:ff9b::${dotted(v)}`, dotted(v)]) {
          expect(classifyAddress(text), text).toBeNull();
        }
      }),
    );
  });

  it("classifies the addresses of the report", () => {
    expect(classifyAddress("::ffff:0:7f00:1")).toBe("loopback");
    expect(classifyAddress("::ffff:0:a9fe:a9fe")).toBe("metadata");
    expect(classifyAddress("::ffff:0:0")).toBe("unspecified");
    expect(classifyAddress("64:ff9b:1::a00:1")).toBe("reserved");
    expect(classifyAddress("64:ff9b:1:a00:1::")).toBe("reserved");
  });
});
