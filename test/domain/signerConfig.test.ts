// The remote signer's configuration (product §24, docs/signer.md): SIGNER_URL and SIGNER_ADDRESS together, never with WALLET_MNEMONIC, the URL a secret, the timeout bounded; SIGNER_URL_<NETWORK> per network, for the one address; and the request and checks of chain/remoteSigner.ts without a node.
import { inspect } from "node:util";
import { type Hex, parseTransaction, serializeTransaction, type TransactionSerializable } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { checkSigned, signRequest } from "../../src/chain/remoteSigner.ts";
import { RemoteSigners } from "../../src/chain/signers.ts";
import { ConfigError, loadConfig, signerUrlSuffix } from "../../src/config.ts";
import { SignerError } from "../../src/domain/chain.ts";

const ADDRESS = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const URL_WITH_KEY = "https://ops:hunter2-signer@signer.internal:8550/rpc";
const MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow";

function configError(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  return "no error";
}

describe("SIGNER_URL and SIGNER_ADDRESS", () => {
  it("take a remote signer: the URL sealed as a secret, the address checksummed, a 5 s timeout by default", () => {
    const config = loadConfig({ SIGNER_URL: URL_WITH_KEY, SIGNER_ADDRESS: ADDRESS.toLowerCase() });
    expect(config.signer?.address).toBe(ADDRESS);
    expect(config.signer?.timeoutMs).toBe(5000);
    expect(config.signer?.url.reveal()).toBe(URL_WITH_KEY);
    expect(config.walletMnemonic).toBeNull();
    for (const shown of [JSON.stringify(config), inspect(config, { depth: 10 }), String(config.signer?.url)]) {
      expect(shown).not.toContain("hunter2");
    }
    expect(
      loadConfig({ SIGNER_URL: URL_WITH_KEY, SIGNER_ADDRESS: ADDRESS, SIGNER_TIMEOUT_MS: "750" }).signer?.timeoutMs,
    ).toBe(750);
    expect(loadConfig({}).signer).toBeNull();
  });

  it("go together, never with WALLET_MNEMONIC, and refuse a bad URL, address or timeout with clear messages", () => {
    expect(configError({ SIGNER_URL: URL_WITH_KEY })).toBe(
      "SIGNER_URL and SIGNER_ADDRESS go together: set both, or neither",
    );
    expect(configError({ SIGNER_ADDRESS: ADDRESS })).toBe(
      "SIGNER_URL and SIGNER_ADDRESS go together: set both, or neither",
    );
    expect(configError({ SIGNER_URL: URL_WITH_KEY, SIGNER_ADDRESS: ADDRESS, WALLET_MNEMONIC: MNEMONIC })).toMatch(
      /^WALLET_MNEMONIC must not be set with SIGNER_URL/,
    );
    expect(configError({ SIGNER_URL: "ftp://ops:hunter2@signer", SIGNER_ADDRESS: ADDRESS })).toBe(
      "SIGNER_URL must be an http(s) URL",
    );
    expect(configError({ SIGNER_URL: "not a url hunter2", SIGNER_ADDRESS: ADDRESS })).toBe(
      "SIGNER_URL must be an http(s) URL",
    );
    expect(configError({ SIGNER_URL: URL_WITH_KEY, SIGNER_ADDRESS: "0x1234" })).toMatch(
      /^SIGNER_ADDRESS is not a valid address/,
    );
    // A mixed-case address with a broken checksum is a typo, refused.
    expect(configError({ SIGNER_URL: URL_WITH_KEY, SIGNER_ADDRESS: ADDRESS.replace("F79", "f79") })).toMatch(
      /EIP-55 checksum/,
    );
    expect(configError({ SIGNER_URL: URL_WITH_KEY, SIGNER_ADDRESS: ADDRESS, SIGNER_TIMEOUT_MS: "10" })).toBe(
      "SIGNER_TIMEOUT_MS must be between 100 and 60000",
    );
    expect(configError({ SIGNER_TIMEOUT_MS: "1000" })).toMatch(/^SIGNER_TIMEOUT_MS set without SIGNER_URL/);
  });
});

describe("SIGNER_URL_<NETWORK>", () => {
  const base = { SIGNER_URL: URL_WITH_KEY, SIGNER_ADDRESS: ADDRESS };

  it("names a network's own signer by its name upper-cased, other than letters and digits as _; SIGNER_URL signs for the others", () => {
    expect(signerUrlSuffix("base-sepolia")).toBe("BASE_SEPOLIA");
    expect(signerUrlSuffix("ethereum")).toBe("ETHEREUM");
    expect(signerUrlSuffix("op_main2")).toBe("OP_MAIN2");
    const own = "https://ops:base-secret@web3signer-base.internal:9000";
    const config = loadConfig({ ...base, SIGNER_URL_BASE_SEPOLIA: own, SIGNER_URL_POLYGON: "" });
    const signer = config.signer;
    if (signer === null) throw new Error("no signer");
    expect([...signer.networkUrls.keys()]).toEqual(["BASE_SEPOLIA"]);
    expect(signer.networkUrls.get("BASE_SEPOLIA")?.reveal()).toBe(own);
    expect(JSON.stringify(config)).not.toContain("base-secret");
    expect(inspect(config, { depth: 10 })).not.toContain("base-secret");
    const signers = new RemoteSigners(signer);
    expect(signers.variableOf("base-sepolia")).toBe("SIGNER_URL_BASE_SEPOLIA");
    expect(signers.variableOf("ethereum")).toBe("SIGNER_URL");
    // One address on every network: the forwarders' factory and deposit addresses depend on it.
    expect(signers.for("base-sepolia").address).toBe(ADDRESS);
    expect(signers.for("ethereum").address).toBe(ADDRESS);
    expect(loadConfig(base).signer?.networkUrls.size).toBe(0);
  });

  it("is refused without SIGNER_URL, with a bad URL or name, and next to a per-network address", () => {
    expect(configError({ SIGNER_URL_BASE: URL_WITH_KEY })).toBe(
      "SIGNER_URL_BASE set without SIGNER_URL and SIGNER_ADDRESS: SIGNER_URL signs for the networks without their own",
    );
    expect(configError({ ...base, SIGNER_URL_BASE: "ftp://ops:hunter2@signer" })).toBe(
      "SIGNER_URL_BASE must be an http(s) URL",
    );
    expect(configError({ ...base, SIGNER_URL_base: URL_WITH_KEY })).toMatch(
      /^SIGNER_URL_base: the network's name is upper-cased/,
    );
    expect(configError({ ...base, SIGNER_ADDRESS_BASE: ADDRESS })).toMatch(
      /^SIGNER_ADDRESS_BASE: every network's signer signs for the one SIGNER_ADDRESS/,
    );
    for (const env of [{ ...base, SIGNER_URL_BASE: "not a url hunter2" }, { SIGNER_URL_BASE: URL_WITH_KEY }]) {
      expect(configError(env)).not.toContain("hunter2");
    }
  });
});

// anvil's fourth and fifth accounts: well-known test keys.
const key = privateKeyToAccount("0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6");
const otherKey = privateKeyToAccount("0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a");
const asked: TransactionSerializable = {
  type: "eip1559",
  chainId: 1,
  nonce: 7,
  to: "0x000000000000000000000000000000000000bEEF",
  value: 0n,
  data: "0xa9059cbb",
  gas: 60_000n,
  maxFeePerGas: 3_000_000_000n,
  maxPriorityFeePerGas: 1_000_000_000n,
};

async function rejection(raw: Hex, tx: TransactionSerializable = asked): Promise<string> {
  try {
    await checkSigned(raw, tx, key.address);
    return "accepted";
  } catch (error) {
    expect(error).toBeInstanceOf(SignerError);
    return (error as SignerError).code;
  }
}

describe("a remote signer's answer", () => {
  it("is asked for in hex quantities, with EIP-1559 fees or a gas price", () => {
    expect(signRequest(key.address, asked)).toEqual({
      from: key.address,
      to: asked.to,
      gas: "0xea60",
      value: "0x0",
      data: "0xa9059cbb",
      nonce: "0x7",
      chainId: "0x1",
      maxFeePerGas: "0xb2d05e00",
      maxPriorityFeePerGas: "0x3b9aca00",
    });
    const legacy = signRequest(key.address, {
      type: "legacy",
      chainId: 1,
      nonce: 0,
      gas: 21_000n,
      gasPrice: 5n,
      to: key.address,
      value: 9n,
    });
    expect(legacy).toMatchObject({ gasPrice: "0x5", value: "0x9" });
    expect(legacy).not.toHaveProperty("maxFeePerGas");
  });

  it("is kept only when signed by SIGNER_ADDRESS and exactly the transaction asked", async () => {
    expect(await rejection(await key.signTransaction(asked))).toBe("accepted");
    expect(await rejection(await otherKey.signTransaction(asked))).toBe("signer_wrong_address");
    for (const change of [
      { to: "0x000000000000000000000000000000000000dEaD" as Hex },
      { value: 1n },
      { data: "0xa9059cbc" as Hex },
      { nonce: 8 },
      { chainId: 8453 },
      { gas: 60_001n },
      { maxFeePerGas: 3_000_000_001n },
      { maxPriorityFeePerGas: 2n },
      { accessList: [{ address: key.address, storageKeys: [] }] },
    ]) {
      expect(
        await rejection(await key.signTransaction({ ...asked, ...change } as TransactionSerializable)),
        JSON.stringify(change, (_, v) => (typeof v === "bigint" ? String(v) : v)),
      ).toBe("signer_tampered");
    }
    const legacyAsked: TransactionSerializable = {
      type: "legacy",
      chainId: 1,
      nonce: 7,
      gas: 21_000n,
      gasPrice: 5n,
      to: asked.to,
      value: 9n,
    };
    expect(await rejection(await key.signTransaction(legacyAsked), legacyAsked)).toBe("accepted");
    expect(await rejection(await key.signTransaction(asked), legacyAsked)).toBe("signer_tampered");
    expect(await rejection("0xdeadbeef")).toBe("signer_bad_answer");
    // Unsigned: the asked transaction's own bytes.
    expect(await rejection(serializeTransaction(asked))).toBe("signer_bad_answer");
    expect(parseTransaction(await key.signTransaction(asked)).to?.toLowerCase()).toBe(asked.to?.toLowerCase());
  });
});
