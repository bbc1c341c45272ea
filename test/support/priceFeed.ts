// A Chainlink-style price feed on the local chain for rate tests: test/support/fixtures/TestPriceFeed.sol compiled with solc, deployed, its round set at will.
import { mnemonicToSeedSync } from "@scure/bip39";
import { createWalletClient, getAddress, type Hex, http } from "viem";
import { HDKey, hdKeyToAccount } from "viem/accounts";
import { CHAIN_MNEMONIC, type CompiledContract, compileFixture, type LocalChain } from "./chain.ts";

/** The feed of test/support/fixtures/TestPriceFeed.sol, compiled once per test file. */
export function compilePriceFeed(): CompiledContract {
  return compileFixture("TestPriceFeed");
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
