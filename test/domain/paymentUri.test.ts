// EIP-681 URIs: token transfers and native payments carry the chain id and an exact integer amount.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chainIdOf, paymentUri } from "../../src/domain/paymentUri.ts";

const to = "0x1111111111111111111111111111111111111111";
const token = "0xdAC17F958D2ee523a2206206994597C13D831ec7";

describe("paymentUri", () => {
  it("is a transfer call on the token contract for an ERC-20", () => {
    expect(paymentUri({ address: to, chainId: 1, contractAddress: token, amountMinor: 100_500_000n })).toBe(
      `ethereum:${token}@1/transfer?address=${to}&uint256=100500000`,
    );
  });

  it("is a value transfer to the address for ether", () => {
    expect(paymentUri({ address: to, chainId: 11155111, contractAddress: null, amountMinor: 3n * 10n ** 17n })).toBe(
      `ethereum:${to}@11155111?value=300000000000000000`,
    );
  });

  it("writes every amount as the plain integer it is", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), (amount) => {
        const uri = paymentUri({ address: to, chainId: 1, contractAddress: null, amountMinor: amount });
        expect(BigInt(uri.split("value=")[1] ?? "x")).toBe(amount);
      }),
    );
  });

  it("refuses a negative amount", () => {
    expect(() => paymentUri({ address: to, chainId: 1, contractAddress: null, amountMinor: -1n })).toThrow();
  });
});

describe("chainIdOf", () => {
  it("names mainnet live and Sepolia in the sandbox; an unknown network has none", () => {
    expect(chainIdOf("ethereum", false)).toBe(1);
    expect(chainIdOf("ethereum", true)).toBe(11155111);
    expect(chainIdOf("card", false)).toBeNull();
  });
});
