// A Chainlink-style price feed on the local chain for rate tests: test/support/fixtures/TestPriceFeed.sol compiled with solc, deployed, its round set at will.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { mnemonicToSeedSync } from "@scure/bip39";
import { type Abi, createWalletClient, getAddress, type Hex, http } from "viem";
import { HDKey, hdKeyToAccount } from "viem/accounts";
import { CHAIN_MNEMONIC, type CompiledContract, type LocalChain } from "./chain.ts";

const require = createRequire(import.meta.url);
let compiled: CompiledContract | null = null;

/** Compiles the feed once per test file (solc from npm, offline). */
export function compilePriceFeed(): CompiledContract {
  if (compiled) return compiled;
  const solc = require("solc") as { compile(input: string): string };
  const source = readFileSync(fileURLToPath(new URL("./fixtures/TestPriceFeed.sol", import.meta.url)), "utf8");
  const input = {
    language: "Solidity",
    sources: { "TestPriceFeed.sol": { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "shanghai",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const contract = output.contracts["TestPriceFeed.sol"]?.TestPriceFeed;
  if (!contract) throw new Error("TestPriceFeed did not compile");
  compiled = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
  return compiled;
}

export interface PriceFeed {
  address: Hex;
  decimals: number;
  /** Sets the latest round: `answer` in the feed's units, `updatedAt` in seconds since the epoch. */
  setRound(answer: bigint, updatedAt: number): Promise<void>;
  setReverting(on: boolean): Promise<void>;
}

/** Seconds since the epoch, now. */
export const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Deploys a feed from the node's last account (index 4, which no other helper sends from, so its
 * nonces never race the token deployer's) and waits for each change to be mined.
 */
export async function deployPriceFeed(
  chain: LocalChain,
  options: { decimals?: number; answer: bigint; updatedAt?: number },
): Promise<PriceFeed> {
  const { abi, bytecode } = compilePriceFeed();
  const account = hdKeyToAccount(HDKey.fromMasterSeed(mnemonicToSeedSync(CHAIN_MNEMONIC)), { addressIndex: 4 });
  const viemChain = {
    id: chain.chainId,
    name: "local",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.url] } },
  };
  const wallet = createWalletClient({ account, chain: viemChain, transport: http(chain.url, { retryCount: 0 }) });
  const decimals = options.decimals ?? 8;
  const hash = await wallet.deployContract({
    abi,
    bytecode,
    account,
    chain: viemChain,
    args: [decimals, options.answer, BigInt(options.updatedAt ?? nowSeconds())],
  });
  const receipt = await chain.client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
  if (!receipt.contractAddress) throw new Error("TestPriceFeed was not deployed");
  const address = getAddress(receipt.contractAddress);
  const write = async (functionName: string, args: unknown[]) => {
    const tx = await wallet.writeContract({ address, abi, functionName, args, account, chain: viemChain });
    const mined = await chain.waitForReceipt(tx);
    if (mined.status !== "success") throw new Error(`${functionName} reverted`);
  };
  return {
    address,
    decimals,
    setRound: (answer, updatedAt) => write("setRound", [answer, BigInt(updatedAt)]),
    setReverting: (on) => write("setReverting", [on]),
  };
}
