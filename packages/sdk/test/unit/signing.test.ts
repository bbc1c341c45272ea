// The SDK signs exactly as the interface states: the worked example of docs/signed-operations.md (computed with openssl).
import { describe, expect, it } from "vitest";
import { canonicalBody, signRequest } from "../../src/index.ts";

describe("signRequest", () => {
  it("gives the documented signature for the worked example, whatever the key order", () => {
    const input = {
      path: "/public/v1/withdrawals/create",
      timestamp: "1767225600",
      requestId: "0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b",
      secretKey: "5a1f0c3e9b7d4a2f8c6e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a",
    };
    const expected = "v1=54cb85330b6b14da507bc54f0430756de2f239efddc207ac36bcedd1267096f9";
    expect(signRequest({ ...input, body: { withdrawalMethodId: 7, currency: "USDT", amount: "150.25" } })).toBe(
      expected,
    );
    expect(signRequest({ ...input, body: { amount: "150.25", currency: "USDT", withdrawalMethodId: 7 } })).toBe(
      expected,
    );
  });

  it("canonicalizes with RFC 8785 at every depth, not only the top-level keys", () => {
    expect(canonicalBody({ b: { z: 1, a: [10.0, 1e30] }, a: "€" })).toBe('{"a":"€","b":{"a":[10,1e+30],"z":1}}');
  });

  it("refuses a body that has no JSON form", () => {
    expect(() => canonicalBody(undefined)).toThrow(TypeError);
  });
});
