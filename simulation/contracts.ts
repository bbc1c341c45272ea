// The contracts a simulated network needs: the test ERC-20 of test/support/fixtures/TestToken.sol, compiled once per process.
import { createRequire } from "node:module";
import { encodeDeployData, encodeFunctionData, getContractAddress } from "viem";
import type { Hex } from "../src/domain/chain.ts";
import { assert } from "../src/domain/result.ts";
import { type CompiledContract, compileFixture } from "../test/support/solcFixture.ts";
import type { SimAccount, SimulatedNetwork } from "./network.ts";

const require = createRequire(import.meta.url);

const jsSha3 = require("js-sha3") as { keccak256: { arrayBuffer(message: Uint8Array): ArrayBuffer } };
/**
 * keccak-256 of js-sha3 (pinned, also solc's): about three times faster than @noble/hashes', and the
 * state trie hashes thousands of nodes per seed.
 */
export function fastKeccak256(message: Uint8Array): Uint8Array {
  return new Uint8Array(jsSha3.keccak256.arrayBuffer(message));
}

/** The test ERC-20 of test/support/fixtures/TestToken.sol (compiling costs about a second, once per process). */
export function compileTestToken(): CompiledContract {
  return compileFixture("TestToken");
}

export interface DeployedTestToken {
  address: Hex;
  decimals: number;
  /** Mints `amount` to `to` and mines it at `timestampSeconds`. */
  mint(to: Hex, amount: bigint, timestampSeconds: bigint): Promise<void>;
}

/** Mines `hash` alone (other senders' pending transactions stay pending) and checks it succeeded. */
async function mineAlone(network: SimulatedNetwork, hash: Hex, timestampSeconds: bigint): Promise<void> {
  const exclude = new Set(network.pendingHashes().filter((h) => h !== hash));
  await network.mine(timestampSeconds, { exclude });
  const receipt = await network.client().receipt(hash);
  assert(receipt.ok && receipt.value?.status === "success", `the token's transaction ${hash} succeeded`);
}

/** Deploys the test ERC-20 (owner = from) and mines it; answers its address; `mint` mints and mines. */
export async function deployTestToken(
  network: SimulatedNetwork,
  owner: SimAccount,
  timestampSeconds: bigint,
): Promise<DeployedTestToken> {
  const { abi, bytecode } = compileTestToken();
  const decimals = 6;
  const nonce = await network.client().nonce(owner.address, "pending");
  assert(nonce.ok, "the simulated node answers nonces");
  const data = encodeDeployData({ abi, bytecode, args: ["Test Tether", "USDT", decimals] });
  const hash = await network.send(owner, { to: null, data, nonce: nonce.value });
  await mineAlone(network, hash, timestampSeconds);
  const address = getContractAddress({ from: owner.address, nonce: BigInt(nonce.value) });
  return {
    address,
    decimals,
    async mint(to, amount, mintedAtSeconds) {
      const minted = await network.send(owner, {
        to: address,
        data: encodeFunctionData({ abi, functionName: "mint", args: [to, amount] }),
      });
      await mineAlone(network, minted, mintedAtSeconds);
    },
  };
}
