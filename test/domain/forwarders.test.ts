// The keyless deposit addresses' arithmetic (product §24), checked against viem's own CREATE/CREATE2 and ABI encoding.
import fc from "fast-check";
import { encodeAbiParameters, getAddress, getContractAddress, type Hex, keccak256, toHex } from "viem";
import { describe, expect, it } from "vitest";
import { FORWARDER_FACTORY_BYTECODE } from "../../src/domain/forwarderContracts.generated.ts";
import {
  checkFlushBatch,
  cloneInitCode,
  create2Address,
  createAddress,
  DEPLOYMENT_PROXY,
  FACTORY_DEPLOY_SALT,
  factoryAddress,
  factoryInitCode,
  factoryVersionOf,
  forwarderAddress,
  forwarderId,
  forwarderImplementationAddress,
  forwarderSalt,
  invoiceDepositAddress,
  MAX_FLUSH_BATCH,
  splitBatchFee,
} from "../../src/domain/forwarders.ts";

const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => getAddress(toHex(b)));
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => toHex(b));
const code = fc.uint8Array({ minLength: 0, maxLength: 200 }).map((b) => toHex(b));

describe("CREATE and CREATE2 addresses", () => {
  it("CREATE2 matches viem for any deployer, salt and init code", () => {
    fc.assert(
      fc.property(address, bytes32, code, (deployer, salt, initCode) => {
        const expected = getContractAddress({ opcode: "CREATE2", from: deployer, salt, bytecode: initCode });
        expect(create2Address(deployer, salt, initCode)).toBe(expected);
      }),
    );
  });

  it("CREATE matches viem for nonces 1 to 127 and refuses others", () => {
    fc.assert(
      fc.property(address, fc.integer({ min: 1, max: 127 }), (deployer, nonce) => {
        expect(createAddress(deployer, nonce)).toBe(getContractAddress({ from: deployer, nonce: BigInt(nonce) }));
      }),
    );
    for (const bad of [0, 128, 1.5, -1]) expect(() => createAddress(DEPLOYMENT_PROXY, bad)).toThrow();
  });

  it("refuses malformed inputs rather than hashing something else", () => {
    expect(() => create2Address("0x12", FACTORY_DEPLOY_SALT, "0x")).toThrow();
    expect(() => create2Address(DEPLOYMENT_PROXY, "0x00", "0x")).toThrow();
    expect(() => create2Address(DEPLOYMENT_PROXY, FACTORY_DEPLOY_SALT, "0xabc")).toThrow();
    expect(() => forwarderId("")).toThrow();
  });
});

describe("the factory and its forwarders", () => {
  it("the factory is the proxy's CREATE2 of its creation code with the owner as constructor argument", () => {
    fc.assert(
      fc.property(address, (owner) => {
        const initCode =
          `${FORWARDER_FACTORY_BYTECODE}${encodeAbiParameters([{ type: "address" }], [owner]).slice(2)}` as Hex;
        expect(factoryInitCode(owner)).toBe(initCode);
        const expected = getContractAddress({
          opcode: "CREATE2",
          from: getAddress(DEPLOYMENT_PROXY),
          salt: FACTORY_DEPLOY_SALT,
          bytecode: initCode,
        });
        expect(factoryAddress(owner)).toBe(expected);
      }),
      { numRuns: 20 },
    );
  });

  it("a deposit address is the factory's CREATE2 of an EIP-1167 clone, salted with the id (version 1: and the owner)", () => {
    fc.assert(
      fc.property(address, bytes32, fc.constantFrom(1 as const, 2 as const), (owner, id, version) => {
        const salt =
          version === 1 ? keccak256(encodeAbiParameters([{ type: "bytes32" }, { type: "address" }], [id, owner])) : id;
        expect(forwarderSalt(id, owner, version)).toBe(salt);
        const factory = factoryAddress(owner, version);
        const implementation = getContractAddress({ from: factory, nonce: 1n });
        expect(forwarderImplementationAddress(factory)).toBe(implementation);
        const clone = cloneInitCode(implementation);
        expect(clone.length).toBe(2 + 55 * 2);
        expect(forwarderAddress(owner, id, version)).toBe(
          getContractAddress({ opcode: "CREATE2", from: factory, salt, bytecode: clone }),
        );
      }),
      { numRuns: 50 },
    );
  });

  it("version 1's addresses never move: the factory and an invoice's address as version 1 handed them out", () => {
    const owner = getAddress("0x1111111111111111111111111111111111111111");
    expect(factoryAddress(owner, 1)).toBe("0x8D3beF48EcE4F4cC77983C6960C86C5C762d984A");
    expect(forwarderAddress(owner, forwarderId("inv_1"), 1)).toBe("0x24A065C4e15073Fbfa9EEe463A33e07c0920f52b");
    expect(factoryVersionOf(owner, "0x8d3bef48ece4f4cc77983c6960c86c5c762d984a")).toBe(1);
    expect(factoryVersionOf(owner, factoryAddress(owner))).toBe(2);
    expect(factoryAddress(owner)).not.toBe(factoryAddress(owner, 1));
  });

  it("each invoice has its own address, and another hot wallet gives other addresses", () => {
    const owner = getAddress("0x1111111111111111111111111111111111111111");
    const other = getAddress("0x2222222222222222222222222222222222222222");
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
        fc.pre(a !== b);
        expect(invoiceDepositAddress(owner, a)).not.toBe(invoiceDepositAddress(owner, b));
        expect(invoiceDepositAddress(owner, a)).not.toBe(invoiceDepositAddress(other, a));
      }),
      { numRuns: 50 },
    );
    expect(forwarderId("inv_1")).toBe(keccak256(toHex("inv_1")));
    expect(invoiceDepositAddress(owner, "inv_1")).toBe(forwarderAddress(owner, keccak256(toHex("inv_1"))));
  });
});

describe("flush batches", () => {
  const id = forwarderId("inv_1");
  it("takes 1 to 100 entries with 32-byte ids and token addresses or null", () => {
    expect(checkFlushBatch([{ id, token: null }]).ok).toBe(true);
    expect(checkFlushBatch(Array.from({ length: MAX_FLUSH_BATCH }, () => ({ id, token: null }))).ok).toBe(true);
    expect(checkFlushBatch([])).toMatchObject({ ok: false, error: "bad_batch" });
    expect(checkFlushBatch(Array.from({ length: MAX_FLUSH_BATCH + 1 }, () => ({ id, token: null })))).toMatchObject({
      ok: false,
      error: "bad_batch",
    });
    expect(checkFlushBatch([{ id: "0x12", token: null }])).toMatchObject({ ok: false, error: "bad_batch" });
    expect(checkFlushBatch([{ id, token: "0x12" }])).toMatchObject({ ok: false, error: "bad_batch" });
  });

  it("splits a batch's fee over its deposits to the wei, shares differing by at most one", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 24n }), fc.integer({ min: 1, max: MAX_FLUSH_BATCH }), (fee, n) => {
        const shares = splitBatchFee(fee, n);
        expect(shares).toHaveLength(n);
        expect(shares.reduce((a, b) => a + b, 0n)).toBe(fee);
        const min = shares.reduce((a, b) => (b < a ? b : a));
        const max = shares.reduce((a, b) => (b > a ? b : a));
        expect(max - min <= 1n).toBe(true);
      }),
    );
    expect(splitBatchFee(10n, 3)).toEqual([4n, 3n, 3n]);
    expect(() => splitBatchFee(-1n, 3)).toThrow();
    expect(() => splitBatchFee(10n, 0)).toThrow();
    expect(() => splitBatchFee(10n, MAX_FLUSH_BATCH + 1)).toThrow();
  });
});
