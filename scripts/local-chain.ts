// A payer's wallet on a local chain (README: live mode against a local chain): deploys the test ERC-20, sends it or ETH to an invoice's address, and mines blocks.
// Usage (the node at RPC_URL, default http://127.0.0.1:8545, started with the phrase CHAIN_MNEMONIC of test/support/chain.ts):
//   node --import tsx scripts/local-chain.ts deploy                  deploys TestToken (USDT, 6 decimals), mints 1000 to the payer
//   node --import tsx scripts/local-chain.ts pay <token> <to> <amount>   sends <amount> tokens from the payer
//   node --import tsx scripts/local-chain.ts pay-eth <to> <amount>   sends <amount> ETH from the payer
//   node --import tsx scripts/local-chain.ts mine <blocks>           mines empty blocks (confirmations)
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  type Hex,
  http,
  parseEther,
  parseUnits,
} from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { CHAIN_MNEMONIC, compileTestToken } from "../test/support/chain.ts";

const rpcUrl = process.env.RPC_URL ?? "http://127.0.0.1:8545";
const transport = http(rpcUrl, { retryCount: 0, timeout: 10_000 });
const publicClient = createPublicClient({ transport });
const chainId = await publicClient.getChainId();
const chain = defineChain({
  id: chainId,
  name: "local",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [rpcUrl] } },
});
const deployer = mnemonicToAccount(CHAIN_MNEMONIC, { addressIndex: 0 });
const payer = mnemonicToAccount(CHAIN_MNEMONIC, { addressIndex: 1 });
const wallet = (account: typeof payer) => createWalletClient({ account, chain, transport });

async function mined(hash: Hex): Promise<void> {
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
  if (receipt.status !== "success") throw new Error(`transaction ${hash} reverted`);
  console.log(`mined ${hash} in block ${receipt.blockNumber}`);
}

const [command, ...args] = process.argv.slice(2);
const { abi, bytecode } = compileTestToken();
switch (command) {
  case "deploy": {
    const hash = await wallet(deployer).deployContract({ abi, bytecode, args: ["Test Tether", "USDT", 6] });
    const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
    if (!receipt.contractAddress) throw new Error("not deployed");
    const token = getAddress(receipt.contractAddress);
    await mined(
      await wallet(deployer).writeContract({
        address: token,
        abi,
        functionName: "mint",
        args: [payer.address, parseUnits("1000", 6)],
      }),
    );
    console.log(`token ${token} (6 decimals); payer ${payer.address} holds 1000`);
    break;
  }
  case "pay": {
    const [token, to, amount] = args;
    if (!token || !to || !amount) throw new Error("pay <token> <to> <amount>");
    await mined(
      await wallet(payer).writeContract({
        address: getAddress(token),
        abi,
        functionName: "transfer",
        args: [getAddress(to), parseUnits(amount, 6)],
      }),
    );
    break;
  }
  case "pay-eth": {
    const [to, amount] = args;
    if (!to || !amount) throw new Error("pay-eth <to> <amount>");
    await mined(await wallet(payer).sendTransaction({ to: getAddress(to), value: parseEther(amount) }));
    break;
  }
  case "mine": {
    const blocks = Number(args[0] ?? "1");
    for (let i = 0; i < blocks; i++) await publicClient.request({ method: "evm_mine" as never, params: [] as never });
    console.log(`head ${await publicClient.getBlockNumber()}`);
    break;
  }
  default:
    console.error("commands: deploy | pay <token> <to> <amount> | pay-eth <to> <amount> | mine <blocks>");
    process.exit(2);
}
