// Scoped keys' pure rules: which scopes let a key into a route, and CIDR ranges over IPv4, IPv6 and IPv4-mapped IPv6.
import { describe, expect, it } from "vitest";
import { type AddressRange, parseAddress, parseRange } from "../../src/domain/addressRanges.ts";
import { type ApiKeyScope, addressAllowed, scopeAllows } from "../../src/domain/apiKeyScopes.ts";

function ranges(...texts: string[]): AddressRange[] {
  return texts.map((text) => {
    const parsed = parseRange(text);
    if (!parsed.ok) throw new Error(parsed.detail);
    return parsed.value;
  });
}

describe("scopeAllows", () => {
  const allows = (scopes: ApiKeyScope[] | null, method: string, pattern: string) =>
    scopeAllows(scopes, method, pattern);

  it("lets a full key in everywhere, a scoped key only where one of its scopes is named", () => {
    expect(allows(null, "POST", "/public/v1/withdrawals/create")).toBe(true);
    expect(allows(null, "GET", "/not/in/the/table")).toBe(true);
    expect(allows(["invoices:write"], "POST", "/public/v1/invoices/create")).toBe(true);
    expect(allows(["invoices:write"], "POST", "/public/v1/invoices/estimateFees")).toBe(true);
    expect(allows(["invoices:write"], "POST", "/x402/v1/settle")).toBe(true);
    expect(allows(["invoices:write"], "POST", "/public/v1/withdrawals/create")).toBe(false);
    expect(allows(["invoices:write"], "GET", "/public/v1/invoices/:id")).toBe(false);
    expect(allows(["withdrawals:write"], "POST", "/public/v1/withdrawals/create")).toBe(true);
    expect(allows(["refunds:write"], "POST", "/public/v1/refunds/create")).toBe(true);
    expect(allows(["refunds:write"], "POST", "/sandbox/v1/payouts/:requestId/outcome")).toBe(true);
    expect(allows(["payment_links:write"], "PATCH", "/public/v1/payment-links/:id")).toBe(true);
    expect(allows(["subscriptions:write"], "POST", "/public/v1/plans")).toBe(true);
    expect(allows(["deposit_addresses:write", "read"], "POST", "/public/v1/plans")).toBe(false);
  });

  it("reads: `read` every GET (HEAD alike), `invoices:read` the invoices", () => {
    expect(allows(["read"], "GET", "/public/v1/balances")).toBe(true);
    expect(allows(["read"], "HEAD", "/public/v1/balances")).toBe(true);
    expect(allows(["read"], "GET", "/public/v1/invoices/:id")).toBe(true);
    expect(allows(["invoices:read"], "GET", "/public/v1/invoices/byOrder/:order_no")).toBe(true);
    expect(allows(["invoices:read"], "GET", "/public/v1/balances")).toBe(false);
    expect(allows(["read"], "POST", "/public/v1/invoices/create")).toBe(false);
  });

  it("refuses a scoped key on a route missing from the table, and lets it into routes without a key", () => {
    expect(allows(["read"], "GET", "/public/v1/unknown")).toBe(false);
    expect(allows(["invoices:read"], "GET", "/public/v1/currencies")).toBe(true);
  });
});

describe("address ranges", () => {
  it("parses IPv4, IPv6 and IPv4-mapped IPv6 alike", () => {
    expect(parseAddress("10.0.0.1")).toBe(parseAddress("::ffff:10.0.0.1"));
    expect(parseAddress("::ffff:a00:1")).toBe(parseAddress("10.0.0.1"));
    expect(parseAddress("2001:db8::1")).toBe((0x20010db8n << 96n) | 1n);
    expect(parseAddress("2001:DB8:0:0:0:0:0:1")).toBe(parseAddress("2001:db8::1"));
    expect(parseAddress("fe80::1%eth0")).toBe(parseAddress("fe80::1"));
    expect(parseAddress("::")).toBe(0n);
    for (const bad of ["", "10.0.0", "10.0.0.256", "010.0.0.1", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "host"]) {
      expect(parseAddress(bad), bad).toBeNull();
    }
  });

  it("refuses what is not CIDR, or has bits past its prefix", () => {
    for (const bad of [
      "10.1.2.3/8",
      "10.0.0.0/33",
      "::1/129",
      "10.0.0.0/8/1",
      "10.0.0.0/08",
      "fe80::%eth0/64",
      "x/8",
    ]) {
      expect(parseRange(bad).ok, bad).toBe(false);
    }
    for (const good of ["10.0.0.0/8", "0.0.0.0/0", "::/0", "2001:db8::/32", "192.0.2.7", "::ffff:10.0.0.0/104"]) {
      expect(parseRange(good).ok, good).toBe(true);
    }
  });

  it("matches a client address against the ranges, whichever way an IPv4 client is written", () => {
    const allowed = ranges("10.0.0.0/8", "2001:db8::/32", "192.0.2.7");
    for (const inside of ["10.255.0.1", "::ffff:10.1.2.3", "2001:db8:ffff::1", "192.0.2.7", "::ffff:192.0.2.7"]) {
      expect(addressAllowed(allowed, inside), inside).toBe(true);
    }
    for (const outside of ["11.0.0.1", "192.0.2.8", "2001:db9::1", "::1", "::10.0.0.1", "garbage", ""]) {
      expect(addressAllowed(allowed, outside), outside).toBe(false);
    }
    expect(addressAllowed(null, "203.0.113.1")).toBe(true);
    // IPv4 /0 is every IPv4 client (mapped too) and no IPv6 one; ::/0 is every client.
    expect(addressAllowed(ranges("0.0.0.0/0"), "::ffff:203.0.113.1")).toBe(true);
    expect(addressAllowed(ranges("0.0.0.0/0"), "2001:db8::1")).toBe(false);
    expect(addressAllowed(ranges("::/0"), "203.0.113.1")).toBe(true);
    expect(addressAllowed(ranges("::ffff:10.0.0.0/104"), "10.3.2.1")).toBe(true);
  });
});
