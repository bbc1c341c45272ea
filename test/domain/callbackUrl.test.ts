// Callback destination rules: http(s) only; loopback, private, link-local, CGNAT, metadata and embedded forms refused in live mode.
import { describe, expect, it } from "vitest";
import { checkCallbackUrl, type ResolveHost } from "../../src/app/callbackDestination.ts";
import { classifyAddress, embeddedIpv4, ipv6Groups, parseCallbackUrl } from "../../src/domain/callbackUrl.ts";

const fakeDns =
  (table: Record<string, string[]>): ResolveHost =>
  async (hostname) => {
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };

describe("classifyAddress", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["169.254.1.1", "link_local"],
    ["fe80::1", "link_local"],
    ["febf::1", "link_local"],
    ["100.64.0.1", "shared"],
    ["100.127.255.254", "shared"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    ["169.254.169.254", "metadata"],
    ["fd00:ec2::254", "metadata"],
    ["224.0.0.1", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "reserved"],
    ["192.0.2.10", "reserved"],
    ["2001:db8::1", "reserved"],
    // IPv4 inside IPv6: mapped, compatible, NAT64 and 6to4 forms reach the IPv4 address.
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["::7f00:1", "loopback"],
    ["64:ff9b::a00:1", "private"],
    ["2002:c0a8:101::1", "private"],
    ["not-an-ip", "reserved"],
  ])("%s is %s", (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it.each([
    "93.184.215.14",
    "8.8.8.8",
    "172.32.0.1",
    "100.128.0.1",
    "11.0.0.1",
    "2606:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
  ])("%s is public", (address) => {
    expect(classifyAddress(address)).toBeNull();
  });
});

describe("IPv6 helpers", () => {
  it("expands IPv6 text to eight groups", () => {
    expect(ipv6Groups("::1")).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(ipv6Groups("fd00:ec2::254")).toEqual([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254]);
    expect(ipv6Groups("::ffff:1.2.3.4")).toEqual([0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
    expect(ipv6Groups("1:2:3:4:5:6:7:8")).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(ipv6Groups("1.2.3.4")).toBeNull();
  });

  it("finds the IPv4 address embedded in mapped and translated forms only", () => {
    expect(embeddedIpv4("::ffff:7f00:1")).toBe("127.0.0.1");
    expect(embeddedIpv4("64:ff9b::a9fe:a9fe")).toBe("169.254.169.254");
    expect(embeddedIpv4("2002:0a00:0001::")).toBe("10.0.0.1");
    expect(embeddedIpv4("::1")).toBeNull();
    expect(embeddedIpv4("2606:4700::1111")).toBeNull();
  });
});

describe("parseCallbackUrl", () => {
  it.each(["ftp://shop.example/cb", "javascript:alert(1)", "file:///etc/passwd", "/relative", "not a url", "http://"])(
    "refuses %s",
    (url) => {
      const parsed = parseCallbackUrl(url);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toBe("callback_url_invalid");
    },
  );

  it("refuses URLs longer than 2048 characters", () => {
    expect(parseCallbackUrl(`https://shop.example/${"a".repeat(2048)}`).ok).toBe(false);
  });

  it("accepts http and https", () => {
    expect(parseCallbackUrl("http://shop.example/cb").ok).toBe(true);
    expect(parseCallbackUrl("HTTPS://Shop.Example:8443/cb?x=1").ok).toBe(true);
  });
});

describe("checkCallbackUrl", () => {
  const dns = fakeDns({
    "shop.example": ["93.184.215.14"],
    "internal.example": ["10.0.0.7"],
    "metadata.example": ["169.254.169.254"],
    "ula.example": ["fd00::1"],
    "cgnat.example": ["100.64.1.1"],
    "mapped.example": ["::ffff:192.168.0.1"],
    "mixed.example": ["93.184.215.14", "192.168.0.10"],
    "dev.example": ["127.0.0.1"],
  });

  it.each([
    "http://internal.example/cb",
    "https://metadata.example/latest/meta-data",
    "https://ula.example/cb",
    "https://cgnat.example/cb",
    "https://mapped.example/cb",
    "https://mixed.example/cb",
    "http://dev.example:3000/cb",
    "http://10.1.2.3/",
    "http://172.20.0.1:8080/",
    "http://[::1]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:127.0.0.1]/",
    "http://[fd00:ec2::254]/",
    "http://0x7f000001/",
    "http://2130706433/",
    "http://127.1/",
    "http://0.0.0.0:8080/",
  ])("refuses %s in live mode", async (url) => {
    const checked = await checkCallbackUrl(url, "live", { lookup: dns });
    expect(checked.ok).toBe(false);
    if (!checked.ok) {
      expect(checked.error).toBe("callback_url_not_allowed");
      expect(checked.detail).toMatch(/public addresses only/);
    }
  });

  it("refuses localhost in live mode through the system resolver", async () => {
    const checked = await checkCallbackUrl("http://localhost:3000/cb", "live");
    expect(checked).toMatchObject({ ok: false, error: "callback_url_not_allowed" });
  });

  it("allows loopback in sandbox mode, and nothing else that is not public", async () => {
    for (const url of [
      "http://localhost:3000/cb",
      "http://127.0.0.1:3000/cb",
      "http://[::1]/",
      "http://dev.example/",
    ]) {
      expect((await checkCallbackUrl(url, "sandbox", { lookup: dns })).ok, url).toBe(true);
    }
    expect((await checkCallbackUrl("http://localhost:3000/cb", "sandbox")).ok).toBe(true);
    for (const url of [
      "http://10.1.2.3/",
      "http://metadata.example/",
      "http://169.254.169.254/",
      "http://mixed.example/",
    ]) {
      expect(await checkCallbackUrl(url, "sandbox", { lookup: dns }), url).toMatchObject({
        ok: false,
        error: "callback_url_not_allowed",
      });
    }
  });

  it("accepts a public host and a literal public address", async () => {
    const checked = await checkCallbackUrl("https://shop.example/cb?order=1", "live", { lookup: dns });
    expect(checked.ok).toBe(true);
    if (checked.ok) expect(checked.value.hostname).toBe("shop.example");
    expect((await checkCallbackUrl("http://93.184.215.14/cb", "live", { lookup: dns })).ok).toBe(true);
  });

  it("accepts a host that does not resolve now (every delivery checks again)", async () => {
    expect((await checkCallbackUrl("https://unknown.example/cb", "live", { lookup: dns })).ok).toBe(true);
    const never: ResolveHost = () => new Promise(() => {});
    // A lookup that never answers would hang the check forever without its bound; the test's timeout catches that, not a clock.
    expect((await checkCallbackUrl("https://slow.example/cb", "live", { lookup: never, timeoutMs: 50 })).ok).toBe(true);
  });

  it("refuses other schemes as invalid", async () => {
    expect(await checkCallbackUrl("ftp://shop.example/cb", "live", { lookup: dns })).toMatchObject({
      ok: false,
      error: "callback_url_invalid",
    });
  });
});
