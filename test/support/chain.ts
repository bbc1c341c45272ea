import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import {
  createPublicClient,
  createWalletClient,
  getAddress,
  type Hex,
  http,
  type PublicClient,
  parseEther,
  type WalletClient,
} from "viem";
import type { HDAccount } from "viem/accounts";
import { PERMIT2_ADDRESS } from "../../src/domain/walletAuthorizationAbi.ts";
import { ANVIL_MNEMONIC, startAnvil } from "./anvil.ts";
import { type CompiledContract, compileFixture } from "./solcFixture.ts";

/** The phrase of the node's own funded accounts (payers, the token's owner). Not the service's wallet. */
export const CHAIN_MNEMONIC = ANVIL_MNEMONIC;
/** A valid BIP-39 phrase for the service's WALLET_MNEMONIC in tests: its accounts start empty. */
export const SERVICE_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow";
export const TEST_CHAIN_ID = 1337;
/** The node's funded accounts (payers, the token's owner). */
const ACCOUNTS = 5;

export { type CompiledContract, compileFixture } from "./solcFixture.ts";

/** The ERC-20 of test/support/fixtures/TestToken.sol. */
export function compileTestToken(): CompiledContract {
  return compileFixture("TestToken");
}

export interface TestToken {
  address: Hex;
  decimals: number;
  mint(to: Hex, amount: bigint): Promise<Hex>;
  /** A transfer signed by one of the node's accounts (unlocked). */
  transfer(from: Hex, to: Hex, amount: bigint): Promise<Hex>;
  /** Two Transfer logs in one transaction. */
  transferTwice(from: Hex, to: Hex, first: bigint, second: bigint): Promise<Hex>;
  /** Transfers from or to a blocked address revert (only the deployer may block). */
  setBlocked(account: Hex, blocked: boolean): Promise<Hex>;
  balanceOf(account: Hex): Promise<bigint>;
}

/** A TestToken with EIP-3009 (test/support/fixtures/AuthorizationToken.sol): transfers by the payer's signature. */
export interface AuthorizationToken extends TestToken {
  /** The token's EIP-712 domain (its name is the token's name). */
  eip712: { name: string; version: string };
  /** Whether the authorizer's EIP-3009 nonce is used or canceled. */
  authorizationState(from: Hex, nonce: Hex): Promise<boolean>;
}

export interface AuthorizationTokenOptions {
  name?: string;
  symbol?: string;
  decimals?: number;
  /** The EIP-712 domain's version ("2" for USDC). */
  version?: string;
}

export type ChainFault =
  | "none"
  | "down"
  | "hang"
  | "wrong_chain_id"
  | "error"
  | "refuse_broadcast"
  | "no_head"
  | "no_receipts";

export interface LocalChain {
  url: string;
  port: number;
  chainId: number;
  client: PublicClient;
  /** The node's funded, unlocked accounts (100 ETH each at start). */
  accounts: Hex[];
  /** Mines `blocks` empty blocks. */
  mine(blocks?: number): Promise<void>;
  /** Moves the chain's clock on: the next block is stamped at least `seconds` later. */
  increaseTime(seconds: number): Promise<void>;
  head(): Promise<bigint>;
  /** Turns mining of each transaction as it arrives off (transactions wait in the pool) or on. */
  setAutomine(on: boolean): Promise<void>;
  /** Drops every pending transaction from the node's pool (anvil mines what is pending in the background). */
  dropPending(): Promise<void>;
  snapshot(): Promise<string>;
  /**
   * Reverts to a snapshot: later blocks are replaced by whatever is mined next (a reorganisation).
   * Time moves on so that blocks mined again get other hashes than the replaced ones.
   */
  revert(id: string): Promise<void>;
  sendEth(from: Hex, to: Hex, wei: bigint): Promise<Hex>;
  balance(address: Hex): Promise<bigint>;
  deployToken(options?: { name?: string; symbol?: string; decimals?: number }): Promise<TestToken>;
  /** Deploys an EIP-3009 token (USD Coin, USDC, 6 decimals, EIP-712 version "2" unless told). */
  deployAuthorizationToken(options?: AuthorizationTokenOptions): Promise<AuthorizationToken>;
  /** Puts Permit2's published code at its canonical address (again or not: the same code). */
  installPermit2(): Promise<Hex>;
  waitForReceipt(hash: Hex): Promise<{ status: "success" | "reverted"; blockNumber: bigint }>;
  /**
   * What the node at `url` does (a proxy in front of anvil): `none` answers truly; `down` drops
   * every connection; `hang` never answers; `wrong_chain_id` answers eth_chainId with another
   * chain; `error` answers every call with a JSON-RPC error; `refuse_broadcast` answers
   * eth_sendRawTransaction with a JSON-RPC error (the transaction never reaches the node) and
   * every other call truly; `no_head` answers eth_blockNumber and eth_getBlockByNumber with a
   * JSON-RPC error and every other call truly; `no_receipts` does so for eth_getTransactionReceipt.
   */
  setFault(fault: ChainFault): void;
  /** Stops the node for good. */
  close(): Promise<void>;
}

/**
 * Starts anvil (a child process, its own free 127.0.0.1 port) behind a fault proxy. Each
 * transaction is mined at once (automine); tests add depth with mine() and replace blocks with
 * snapshot()/revert(). Several chains may run at once (e.g. chain ids 1 and 8453).
 */
export async function startLocalChain(options: { chainId?: number } = {}): Promise<LocalChain> {
  const chainId = options.chainId ?? TEST_CHAIN_ID;
  // The node is started and stopped the one way tests do (anvil.ts): its own port, stopped by its pid.
  const node = await startAnvil({ chainId, accounts: ACCOUNTS, balanceEth: 100 });
  let fault: ChainFault = "none";
  const proxy = await startFaultProxy(node.url, chainId, () => fault);
  const port = proxy.port;
  const url = `http://127.0.0.1:${port}`;
  const rpc = node.rpc;
  const client = createPublicClient({ transport: http(url, { retryCount: 0 }) }) as PublicClient;
  // The node's accounts, signed for here (local signing, as the service signs; no eth_sendTransaction).
  const signers = new Map<string, HDAccount>(node.accounts.map((a) => [a.address.toLowerCase(), a]));
  const accounts = [...signers.values()].map((a) => a.address);
  const wallets = new Map<string, WalletClient>();
  const walletOf = (from: Hex): WalletClient => {
    let w = wallets.get(from.toLowerCase());
    if (!w) {
      const account = signers.get(from.toLowerCase());
      if (!account) throw new Error(`${from} is not an account of the local chain`);
      w = createWalletClient({ account, transport: http(url, { retryCount: 0 }) });
      wallets.set(from.toLowerCase(), w);
    }
    return w;
  };
  const signerOf = (from: Hex): HDAccount => {
    const account = signers.get(from.toLowerCase());
    if (!account) throw new Error(`${from} is not an account of the local chain`);
    return account;
  };
  const chain = {
    id: chainId,
    name: "local",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  };
  const signing: Signing = { client, chain, deployer: accounts[0] as Hex, walletOf, signerOf };
  const waitForReceipt = async (hash: Hex) => {
    const r = await client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
    return { status: r.status, blockNumber: r.blockNumber };
  };

  return {
    url,
    port,
    chainId,
    client,
    accounts,
    increaseTime: async (seconds) => {
      await rpc("evm_increaseTime", [seconds]);
    },
    mine: async (blocks = 1) => {
      for (let i = 0; i < blocks; i++) await rpc("evm_mine");
    },
    head: () => client.getBlockNumber({ cacheTime: 0 }),
    setAutomine: async (on) => {
      await rpc("evm_setAutomine", [on]);
    },
    dropPending: async () => {
      await rpc("anvil_dropAllTransactions");
    },
    snapshot: async () => (await rpc("evm_snapshot")) as string,
    revert: async (id) => {
      const reverted = await rpc("evm_revert", [id]);
      if (reverted !== true) throw new Error(`evm_revert ${id} failed`);
      await rpc("evm_increaseTime", [7]);
    },
    sendEth: (from, to, wei) => walletOf(from).sendTransaction({ account: signerOf(from), chain, to, value: wei }),
    balance: (address) => client.getBalance({ address }),
    deployToken: async (tokenOptions = {}) => {
      const decimals = tokenOptions.decimals ?? 6;
      const args = [tokenOptions.name ?? "Test Tether", tokenOptions.symbol ?? "USDT", decimals];
      return deployTestToken(signing, compileTestToken(), args, decimals);
    },
    deployAuthorizationToken: async (tokenOptions = {}) => {
      const decimals = tokenOptions.decimals ?? 6;
      const eip712 = { name: tokenOptions.name ?? "USD Coin", version: tokenOptions.version ?? "2" };
      const compiled = compileFixture("AuthorizationToken");
      const args = [eip712.name, tokenOptions.symbol ?? "USDC", decimals, eip712.version];
      const token = await deployTestToken(signing, compiled, args, decimals);
      const authorizationState = async (from: Hex, nonce: Hex) =>
        (await client.readContract({
          address: token.address,
          abi: compiled.abi,
          functionName: "authorizationState",
          args: [from, nonce],
        })) as boolean;
      return { ...token, eip712, authorizationState };
    },
    installPermit2: () => installPermit2(rpc, chainId),
    waitForReceipt,
    setFault: (next) => {
      fault = next;
    },
    close: async () => {
      await proxy.close();
      await node.close();
    },
  };
}

/** What deploying and writing to a contract from the node's accounts needs. */
interface Signing {
  client: PublicClient;
  chain: {
    id: number;
    name: string;
    nativeCurrency: { name: string; symbol: string; decimals: number };
    rpcUrls: { default: { http: string[] } };
  };
  deployer: Hex;
  walletOf(from: Hex): WalletClient;
  signerOf(from: Hex): HDAccount;
}

/** Deploys a token with TestToken's functions (mint, transfer, transferTwice, setBlocked, balanceOf) from the first account. */
async function deployTestToken(
  signing: Signing,
  compiled: CompiledContract,
  args: unknown[],
  decimals: number,
): Promise<TestToken> {
  const { client, chain, deployer, walletOf, signerOf } = signing;
  const { abi, bytecode } = compiled;
  const hash = await walletOf(deployer).deployContract({ abi, bytecode, account: signerOf(deployer), chain, args });
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
  if (!receipt.contractAddress) throw new Error("the token was not deployed");
  const address = getAddress(receipt.contractAddress);
  const write = (from: Hex, functionName: string, args: unknown[]) =>
    walletOf(from).writeContract({ address, abi, functionName, args, account: signerOf(from), chain });
  return {
    address,
    decimals,
    mint: (to, amount) => write(deployer, "mint", [to, amount]),
    transfer: (from, to, amount) => write(from, "transfer", [to, amount]),
    transferTwice: (from, to, first, second) => write(from, "transferTwice", [to, first, second]),
    setBlocked: (account, blocked) => write(deployer, "setBlocked", [account, blocked]),
    balanceOf: async (account) =>
      (await client.readContract({ address, abi, functionName: "balanceOf", args: [account] })) as bigint,
  };
}

/**
 * Permit2's published runtime code (provenance in test/support/fixtures/README.md). Its build
 * cached chain id 31337 with a domain separator for another address than the canonical one.
 */
export const PERMIT2_CACHED_CHAIN_ID = 31337;

/** test/support/fixtures/Permit2.runtime.hex as 0x-hex. */
export function permit2RuntimeCode(): Hex {
  const text = readFileSync(new URL("./fixtures/Permit2.runtime.hex", import.meta.url), "utf8").trim();
  return `0x${text}`;
}

async function installPermit2(
  rpc: (method: string, params?: unknown[]) => Promise<unknown>,
  chainId: number,
): Promise<Hex> {
  if (chainId === PERMIT2_CACHED_CHAIN_ID) {
    throw new Error(
      `Permit2's fixture code answers a wrong DOMAIN_SEPARATOR on chain ${chainId}: use another chain id`,
    );
  }
  const code = permit2RuntimeCode();
  if ((await rpc("eth_getCode", [PERMIT2_ADDRESS, "latest"])) !== code) {
    await rpc("anvil_setCode", [PERMIT2_ADDRESS, code]);
  }
  if ((await rpc("eth_getCode", [PERMIT2_ADDRESS, "latest"])) !== code) throw new Error("Permit2 was not installed");
  return PERMIT2_ADDRESS;
}

/** An HTTP proxy in front of the node that can fail in the ways a real node does. */
async function startFaultProxy(
  nodeUrl: string,
  chainId: number,
  fault: () => ChainFault,
): Promise<{ port: number; close(): Promise<void> }> {
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const now = fault();
      if (now === "down") {
        request.socket.destroy();
        return;
      }
      if (now === "hang") {
        hanging.add(response);
        response.on("close", () => hanging.delete(response));
        return;
      }
      let parsed: { id?: unknown; method?: string } | { id?: unknown; method?: string }[] = {};
      try {
        parsed = JSON.parse(body);
      } catch {}
      const calls = Array.isArray(parsed) ? parsed : [parsed];
      const refused =
        (now === "refuse_broadcast" && calls.some((c) => c.method === "eth_sendRawTransaction")) ||
        (now === "no_head" &&
          calls.some((c) => c.method === "eth_blockNumber" || c.method === "eth_getBlockByNumber")) ||
        (now === "no_receipts" && calls.some((c) => c.method === "eth_getTransactionReceipt"));
      if (now === "error" || refused) {
        const answers = calls.map((c) => ({
          jsonrpc: "2.0",
          id: c.id ?? null,
          error: { code: -32000, message: "internal error" },
        }));
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
        return;
      }
      let forwarded: Response;
      let text: string;
      try {
        forwarded = await fetch(nodeUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
        text = await forwarded.text();
      } catch {
        // The node closed a reused connection (or is closing): the caller sees a node that did not answer.
        request.socket.destroy();
        return;
      }
      if (now === "wrong_chain_id" && calls.some((c) => c.method === "eth_chainId")) {
        const answers = JSON.parse(text) as { id: unknown; result?: unknown }[] | { id: unknown; result?: unknown };
        const lie = (a: { id: unknown; result?: unknown }, c: { method?: string }) =>
          c.method === "eth_chainId" ? { ...a, result: `0x${(chainId + 1).toString(16)}` } : a;
        text = JSON.stringify(
          Array.isArray(answers) ? answers.map((a, i) => lie(a, calls[i] ?? {})) : lie(answers, calls[0] ?? {}),
        );
      }
      response.writeHead(forwarded.status, { "content-type": "application/json" });
      response.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  return {
    port: address.port,
    close: async () => {
      for (const response of hanging) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Default ETH every payer account can spend: the node funds 100 ETH each. */
export const ONE_ETH = parseEther("1");
