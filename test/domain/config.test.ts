// Configuration refuses what can never work: an ADMIN_TOKEN no client can send, timeouts that contradict each other.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";

const base = { DATABASE_URL: "sqlite::memory:", SECRET_ENCRYPTION_KEY: "a".repeat(64) };
const withToken = (token: string) => () => loadConfig({ ...base, ADMIN_TOKEN: token });

describe("ADMIN_TOKEN", () => {
  it.each([
    ["a space", "operator token with space"],
    ["a tab", "operator\ttoken-long-enough"],
    ["a newline", "operator-token-long\n"],
    ["a NUL", "operator-token-long\u0000x"],
    ["DEL", "operator-token-long\u007f"],
    ["a non-ASCII letter", "operator-tokén-long-enough"],
    ["an emoji", "operator-token-long-🔑"],
    ["a no-break space", "operator-token\u00a0long-enough"],
  ])("is refused with %s", (_what, token) => {
    expect(withToken(token)).toThrow(ConfigError);
    expect(withToken(token)).toThrow(/printable ASCII without spaces/);
  });

  it("is refused when shorter than 16 or longer than 512 characters", () => {
    expect(withToken("short-token")).toThrow(ConfigError);
    expect(withToken("x".repeat(513))).toThrow(ConfigError);
    expect(loadConfig({ ...base, ADMIN_TOKEN: "x".repeat(512) }).adminToken).toBe("x".repeat(512));
  });

  it("accepts exactly the tokens a Bearer header can carry (printable ASCII, no space)", () => {
    const printable = fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c));
    fc.assert(
      fc.property(fc.array(printable, { minLength: 16, maxLength: 64 }), (chars) => {
        const token = chars.join("");
        expect(loadConfig({ ...base, ADMIN_TOKEN: token }).adminToken).toBe(token);
      }),
    );
    const outside = fc.oneof(
      fc.integer({ min: 0, max: 0x20 }),
      fc.integer({ min: 0x7f, max: 0xd7ff }),
      fc.integer({ min: 0xe000, max: 0xffff }),
    );
    fc.assert(
      fc.property(
        fc.array(printable, { minLength: 16, maxLength: 40 }),
        fc.nat(),
        outside.map((c) => String.fromCharCode(c)),
        (chars, at, bad) => {
          chars.splice(at % (chars.length + 1), 0, bad);
          expect(withToken(chars.join(""))).toThrow(ConfigError);
        },
      ),
    );
  });
});

describe("timeouts", () => {
  it("have bounded defaults and are configurable", () => {
    const defaults = loadConfig(base);
    for (const value of [
      defaults.requestTimeoutMs,
      defaults.headersTimeoutMs,
      defaults.connectionTimeoutMs,
      defaults.keepAliveTimeoutMs,
    ]) {
      expect(value).toBeGreaterThan(0);
      expect(value).toBeLessThanOrEqual(600_000);
    }
    const set = loadConfig({ ...base, REQUEST_TIMEOUT_MS: "2000", HEADERS_TIMEOUT_MS: "1000" });
    expect([set.requestTimeoutMs, set.headersTimeoutMs]).toEqual([2000, 1000]);
  });

  it("refuses a headers timeout longer than the request timeout, and 0 (no bound)", () => {
    expect(() => loadConfig({ ...base, REQUEST_TIMEOUT_MS: "1000", HEADERS_TIMEOUT_MS: "2000" })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, REQUEST_TIMEOUT_MS: "0" })).toThrow(ConfigError);
  });
});

describe("WITHDRAWAL_METHOD_COOLING_OFF_MINUTES", () => {
  it("defaults to 24 hours in live mode and none in the sandbox; the operator sets it in minutes, at most 30 days", () => {
    expect(loadConfig({ ...base, SERVICE_MODE: "live" }).withdrawalMethodCoolingOffMs).toBe(86_400_000);
    expect(loadConfig({ ...base, SERVICE_MODE: "sandbox" }).withdrawalMethodCoolingOffMs).toBe(0);
    expect(
      loadConfig({ ...base, SERVICE_MODE: "live", WITHDRAWAL_METHOD_COOLING_OFF_MINUTES: "0" })
        .withdrawalMethodCoolingOffMs,
    ).toBe(0);
    expect(loadConfig({ ...base, WITHDRAWAL_METHOD_COOLING_OFF_MINUTES: "90" }).withdrawalMethodCoolingOffMs).toBe(
      5_400_000,
    );
    expect(() => loadConfig({ ...base, WITHDRAWAL_METHOD_COOLING_OFF_MINUTES: "43201" })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, WITHDRAWAL_METHOD_COOLING_OFF_MINUTES: "1h" })).toThrow(ConfigError);
  });
});

describe("TRUST_PROXY", () => {
  const trust = (value?: string) => loadConfig({ ...base, ...(value === undefined ? {} : { TRUST_PROXY: value }) });

  it("believes no proxy by default", () => {
    expect(trust().trustProxy).toEqual([]);
    expect(trust("").trustProxy).toEqual([]);
  });

  it("takes IPv4 and IPv6 addresses and CIDR ranges, separated by commas", () => {
    expect(trust("127.0.0.1, 10.0.0.0/8,::1,fd00::/8").trustProxy).toEqual([
      "127.0.0.1",
      "10.0.0.0/8",
      "::1",
      "fd00::/8",
    ]);
  });

  it.each([
    ["a host name", "proxy.example.com"],
    ["a prefix past the address length", "10.0.0.0/33"],
    ["an IPv6 prefix past 128", "::1/129"],
    ["a second slash", "10.0.0.0/8/8"],
    ["an empty entry", "127.0.0.1,,10.0.0.1"],
    ["Fastify's boolean (it would believe every client)", "true"],
    ["a hop count", "1"],
  ])("refuses %s", (_what, value) => {
    expect(() => trust(value)).toThrow(ConfigError);
    expect(() => trust(value)).toThrow(/TRUST_PROXY/);
  });

  it("takes at most 100 entries", () => {
    const entries = Array.from({ length: 101 }, (_, i) => `10.0.${i}.1`).join(",");
    expect(() => trust(entries)).toThrow(/at most 100/);
  });
});

describe("ADMIN_TOKEN_FAILURES_PER_MINUTE", () => {
  it("defaults to 20 and may be set, or turned off with 0", () => {
    expect(loadConfig(base).adminTokenFailuresPerMinute).toBe(20);
    expect(loadConfig({ ...base, ADMIN_TOKEN_FAILURES_PER_MINUTE: "5" }).adminTokenFailuresPerMinute).toBe(5);
    expect(loadConfig({ ...base, ADMIN_TOKEN_FAILURES_PER_MINUTE: "0" }).adminTokenFailuresPerMinute).toBe(0);
    expect(() => loadConfig({ ...base, ADMIN_TOKEN_FAILURES_PER_MINUTE: "-1" })).toThrow(ConfigError);
  });
});

describe("CARD_PROVIDER (product §20)", () => {
  const stripe = {
    CARD_PROVIDER: "stripe",
    STRIPE_SECRET_KEY: "sk_test_0123456789abcdef",
    STRIPE_WEBHOOK_SECRET: "whsec_0123456789abcdef",
  };

  it("is off by default: live fiat stays closed", () => {
    expect(loadConfig(base).cardProvider).toBeNull();
  });

  it("takes Stripe with both keys, defaulting STRIPE_API_BASE to Stripe's own address", () => {
    const provider = loadConfig({ ...base, ...stripe }).cardProvider;
    expect(provider?.kind).toBe("stripe");
    expect(provider?.apiBase).toBe("https://api.stripe.com");
    expect(loadConfig({ ...base, ...stripe, STRIPE_API_BASE: "http://127.0.0.1:1234" }).cardProvider?.apiBase).toBe(
      "http://127.0.0.1:1234",
    );
  });

  it.each([
    ["without STRIPE_SECRET_KEY", { ...stripe, STRIPE_SECRET_KEY: "" }, /needs STRIPE_SECRET_KEY/],
    ["without STRIPE_WEBHOOK_SECRET", { ...stripe, STRIPE_WEBHOOK_SECRET: "" }, /needs STRIPE_WEBHOOK_SECRET/],
    ["with keys but no CARD_PROVIDER", { ...stripe, CARD_PROVIDER: "" }, /without CARD_PROVIDER/],
    ["with another provider", { ...stripe, CARD_PROVIDER: "paypal" }, /CARD_PROVIDER must be stripe/],
    ["with a publishable key as the secret", { ...stripe, STRIPE_SECRET_KEY: "pk_test_0123456789" }, /sk_/],
    ["with a webhook secret of another form", { ...stripe, STRIPE_WEBHOOK_SECRET: "secret" }, /whsec_/],
    ["with an API base that has a path", { ...stripe, STRIPE_API_BASE: "https://api.stripe.com/v1" }, /origin/],
  ])("refuses a half or wrong configuration: %s", (_what, env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, ...env })).toThrow(message);
  });

  it("never shows the keys, in messages or when the configuration is printed", () => {
    const config = loadConfig({ ...base, ...stripe });
    expect(JSON.stringify(config)).not.toContain("sk_test_0123456789abcdef");
    expect(JSON.stringify(config)).not.toContain("whsec_0123456789abcdef");
    expect(() => loadConfig({ ...base, ...stripe, STRIPE_SECRET_KEY: "pk_secret_mistyped" })).not.toThrow(/mistyped/);
  });
});
