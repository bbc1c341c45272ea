// Deposit addresses without keys (product §24): the addresses of the forwarder factory and of each deposit forwarder, computed without a node.
import { keccak_256 } from "@noble/hashes/sha3.js";
import { eip55 } from "./evmAddress.ts";
import { FORWARDER_FACTORY_BYTECODE, FORWARDER_FACTORY_V1_BYTECODE } from "./forwarderContracts.generated.ts";
import { assert, err, ok, type Result } from "./result.ts";

export type Address = `0x${string}`;
export type Bytes32 = `0x${string}`;

/** The deterministic deployment proxy (Arachnid's): at this address on nearly every EVM network. */
export const DEPLOYMENT_PROXY: Address = "0x4e59b44847b379578588920ca78fbf26c0b4956c";

/**
 * The proxy's runtime code. A network without the proxy can receive it through its keyless
 * pre-signed deployment transaction; local test nodes get this code installed directly.
 */
export const DEPLOYMENT_PROXY_CODE =
  "0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf3" as const;

/** The salt the factory is deployed with through the proxy. Fixed: another salt is another factory, and other deposit addresses. */
export const FACTORY_DEPLOY_SALT: Bytes32 = `0x${"00".repeat(32)}`;

/** The most forwarders one flush transaction may touch (the factory's MAX_BATCH). */
export const MAX_FLUSH_BATCH = 100;

const HEX = /^0x[0-9a-fA-F]*$/;

function bytesOf(hex: string, length?: number): Uint8Array {
  if (!HEX.test(hex) || hex.length % 2 !== 0) throw new Error(`not hex bytes: ${hex}`);
  const bytes = new Uint8Array((hex.length - 2) / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(2 + i * 2, 4 + i * 2), 16);
  if (length !== undefined && bytes.length !== length) throw new Error(`expected ${length} bytes: ${hex}`);
  return bytes;
}

function hexOf(bytes: Uint8Array): `0x${string}` {
  let out = "0x";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out as `0x${string}`;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The checksummed address in the last 20 bytes of a keccak-256. */
function addressOfHash(hash: Uint8Array): Address {
  return eip55(hexOf(hash.slice(12)).slice(2));
}

/** The address CREATE2 gives: keccak256(0xff ‖ deployer ‖ salt ‖ keccak256(initCode))[12:]. */
export function create2Address(deployer: Address, salt: Bytes32, initCode: `0x${string}`): Address {
  const initCodeHash = keccak_256(bytesOf(initCode));
  return addressOfHash(keccak_256(concat(Uint8Array.of(0xff), bytesOf(deployer, 20), bytesOf(salt, 32), initCodeHash)));
}

/**
 * The address CREATE gives a contract's `nonce`-th creation: keccak256(rlp([deployer, nonce]))[12:].
 * Only nonces 1 to 127 (a single RLP byte), which is all a factory that creates once needs.
 */
export function createAddress(deployer: Address, nonce: number): Address {
  if (!Number.isInteger(nonce) || nonce < 1 || nonce > 0x7f) throw new Error(`nonce out of range: ${nonce}`);
  return addressOfHash(keccak_256(concat(Uint8Array.of(0xd6, 0x94), bytesOf(deployer, 20), Uint8Array.of(nonce))));
}

/** The 32-byte ABI word of an address (left-padded with zeros). */
function addressWord(address: Address): Uint8Array {
  return concat(new Uint8Array(12), bytesOf(address, 20));
}

/**
 * The factory's versions. Its bytecode decides every deposit address, so a new version is a new
 * factory with new addresses: version 1 stays (frozen in contracts/v1) for the addresses it handed
 * out, each flushed by the factory recorded with it; new addresses are the current version's.
 */
export type FactoryVersion = 1 | 2;
export const CURRENT_FACTORY_VERSION: FactoryVersion = 2;
export const FACTORY_VERSIONS: readonly FactoryVersion[] = [2, 1];

const FACTORY_BYTECODES: Readonly<Record<FactoryVersion, string>> = {
  1: FORWARDER_FACTORY_V1_BYTECODE,
  2: FORWARDER_FACTORY_BYTECODE,
};

/** The factory's init code for `owner`: its creation code followed by the ABI-encoded constructor argument. */
export function factoryInitCode(owner: Address, version: FactoryVersion = CURRENT_FACTORY_VERSION): `0x${string}` {
  return hexOf(concat(bytesOf(FACTORY_BYTECODES[version]), addressWord(owner)));
}

// The last owner's factories: hashing the 3 KB init code is most of an address's cost, and a service has one hot wallet.
let lastFactories: { owner: string; factories: Map<FactoryVersion, Address> } | undefined;

/** Where the proxy deploys the factory (by default the current version) owned by `owner`: the same on every network. */
export function factoryAddress(owner: Address, version: FactoryVersion = CURRENT_FACTORY_VERSION): Address {
  const key = owner.toLowerCase();
  if (lastFactories?.owner !== key) lastFactories = { owner: key, factories: new Map() };
  const known = lastFactories.factories.get(version);
  if (known !== undefined) return known;
  const factory = create2Address(DEPLOYMENT_PROXY, FACTORY_DEPLOY_SALT, factoryInitCode(owner, version));
  lastFactories.factories.set(version, factory);
  return factory;
}

/** Which version of `owner`'s factories `factory` is (any case), or null when it is none of them. */
export function factoryVersionOf(owner: Address, factory: string): FactoryVersion | null {
  const key = factory.toLowerCase();
  return FACTORY_VERSIONS.find((v) => factoryAddress(owner, v).toLowerCase() === key) ?? null;
}

/** The forwarder implementation the factory creates in its constructor (its first CREATE: nonce 1). */
export function forwarderImplementationAddress(factory: Address): Address {
  return createAddress(factory, 1);
}

/** The EIP-1167 minimal proxy's init code for `implementation`, byte for byte as OpenZeppelin's Clones builds it. */
export function cloneInitCode(implementation: Address): `0x${string}` {
  return `0x3d602d80600a3d3981f3363d3d373d3d3d363d73${implementation.slice(2).toLowerCase()}5af43d82803e903d91602b57fd5bf3`;
}

/**
 * The forwarder id of an invoice: keccak256 of its id's UTF-8 bytes. Invoice ids are unique and never
 * reused, so each invoice has its own deposit address, and it can be recomputed from the id alone.
 */
export function forwarderId(invoiceId: string): Bytes32 {
  if (invoiceId.length === 0) throw new Error("an invoice id is not empty");
  return hexOf(keccak_256(new TextEncoder().encode(invoiceId)));
}

/**
 * The CREATE2 salt of forwarder `id`. Version 1's saltOf(id) is keccak256(abi.encode(id, owner));
 * version 2 uses the id itself, the owner being bound already by the factory's address.
 */
export function forwarderSalt(id: Bytes32, owner: Address, version: FactoryVersion = 1): Bytes32 {
  if (version !== 1) return hexOf(bytesOf(id, 32));
  return hexOf(keccak_256(concat(bytesOf(id, 32), addressWord(owner))));
}

/** The deposit address of forwarder `id` under the factory (by default the current version) owned by `owner`, deployed or not. */
export function forwarderAddress(
  owner: Address,
  id: Bytes32,
  version: FactoryVersion = CURRENT_FACTORY_VERSION,
): Address {
  const factory = factoryAddress(owner, version);
  const implementation = forwarderImplementationAddress(factory);
  return create2Address(factory, forwarderSalt(id, owner, version), cloneInitCode(implementation));
}

/** The deposit address of an invoice, for the hot wallet `owner`: no private key exists for it. */
export function invoiceDepositAddress(owner: Address, invoiceId: string): Address {
  return forwarderAddress(owner, forwarderId(invoiceId));
}

/**
 * One entry of a flush: forwarder `id`'s native balance, and its balance of `token` unless null.
 * `fresh` (version 2): the forwarder has no code yet, so the factory deploys it without looking.
 */
export interface FlushItem {
  id: Bytes32;
  token: Address | null;
  fresh?: boolean;
}

/** A flush batch the factory accepts: 1 to MAX_FLUSH_BATCH entries, each id 32 bytes, each token an address. */
export function checkFlushBatch(items: readonly FlushItem[]): Result<readonly FlushItem[], "bad_batch"> {
  if (items.length === 0 || items.length > MAX_FLUSH_BATCH) {
    return err("bad_batch", `a flush moves 1 to ${MAX_FLUSH_BATCH} forwarders, not ${items.length}`);
  }
  for (const item of items) {
    if (!/^0x[0-9a-fA-F]{64}$/.test(item.id)) return err("bad_batch", `not a 32-byte forwarder id: ${item.id}`);
    if (item.token !== null && !/^0x[0-9a-fA-F]{40}$/.test(item.token)) {
      return err("bad_batch", `not a token address: ${item.token}`);
    }
  }
  return ok(items);
}

/**
 * A batch's fee split over its `count` deposits, in wei: equal shares, the remainder's wei going one
 * each to the first deposits, so the shares add up to the fee exactly (every wei in the ledger).
 */
export function splitBatchFee(totalWei: bigint, count: number): bigint[] {
  assert(totalWei >= 0n, "a fee is not negative");
  assert(Number.isInteger(count) && count >= 1 && count <= MAX_FLUSH_BATCH, `batch of ${count} deposits`);
  const share = totalWei / BigInt(count);
  const remainder = Number(totalWei % BigInt(count));
  return Array.from({ length: count }, (_, i) => share + (i < remainder ? 1n : 0n));
}
