// EVM address validation (product §12 Addresses) and the HD wallet's derivation paths.
import fc from "fast-check";
import { getAddress } from "viem";
import { describe, expect, it } from "vitest";
import { hdWallet } from "../../src/chain/wallet.ts";
import { checkEvmAddress } from "../../src/domain/evmAddress.ts";
import { normalizeMnemonic } from "../../src/domain/mnemonic.ts";

describe("checkEvmAddress", () => {
  it("takes uniform-case addresses and valid checksums, refuses broken ones", () => {
    const checksummed = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
    expect(checkEvmAddress(checksummed)).toEqual({ ok: true, value: checksummed });
    expect(checkEvmAddress(checksummed.toLowerCase())).toEqual({ ok: true, value: checksummed });
    expect(checkEvmAddress(`0x${checksummed.slice(2).toUpperCase()}`)).toEqual({ ok: true, value: checksummed });
    expect(checkEvmAddress("0x5fbDB2315678afecb367f032d93F642f64180aa3").ok).toBe(false);
    for (const bad of [
      "",
      "0x",
      "5FbDB2315678afecb367f032d93F642f64180aa3",
      "0x5FbDB2315678afecb367f032d93F642f64180aa",
      "0xZZbDB2315678afecb367f032d93F642f64180aa3",
      "0x5FbDB2315678afecb367f032d93F642f64180aa3 ",
    ]) {
      expect(checkEvmAddress(bad)).toMatchObject({ ok: false, error: "invalid_address" });
    }
  });

  it("accepts exactly the checksummed form of any 20 bytes, and flipping one letter's case breaks it", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.nat(39), (bytes, position) => {
        const address = getAddress(`0x${Buffer.from(bytes).toString("hex")}`);
        expect(checkEvmAddress(address)).toEqual({ ok: true, value: address });
        const digits = address.slice(2);
        const c = digits.charAt(position);
        if (!/[a-fA-F]/.test(c)) return;
        const flipped = `0x${digits.slice(0, position)}${c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()}${digits.slice(position + 1)}`;
        const rest = flipped.slice(2);
        if (rest === rest.toLowerCase() || rest === rest.toUpperCase()) return;
        expect(checkEvmAddress(flipped).ok).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});

describe("hdWallet", () => {
  it("derives m/44'/60'/0'/0/n (the well-known addresses of the Hardhat phrase)", () => {
    const wallet = hdWallet("test test test test test test test test test test test junk");
    expect(wallet.hotAddress).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    expect(wallet.deposits.address(1)).toBe("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
    expect(() => wallet.deposits.key(0)).toThrow();
    expect(JSON.stringify(wallet)).not.toContain("junk");
  });

  it("takes only valid BIP-39 phrases", () => {
    expect(normalizeMnemonic("  Test test test test test test test test test test test JUNK ")).toBe(
      "test test test test test test test test test test test junk",
    );
    expect(normalizeMnemonic("test test test test test test test test test test test test")).toBeNull();
    expect(normalizeMnemonic("")).toBeNull();
  });
});
