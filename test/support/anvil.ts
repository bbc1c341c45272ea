// Local anvil nodes for tests (the @foundry-rs/anvil binary, spawned on a free 127.0.0.1 port, stopped by its pid), with the deterministic deployment proxy present.
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import {
  type Abi,
  type Address,
  createPublicClient,
  createWalletClient,
  getAddress,
  type Hex,
  http,
  type PublicClient,
} from "viem";
import { type HDAccount, mnemonicToAccount } from "viem/accounts";
import { compileSolidity, type SolidityOutput } from "../../scripts/solidity.ts";
import { DEPLOYMENT_PROXY, DEPLOYMENT_PROXY_CODE } from "../../src/domain/forwarders.ts";
import { freePort } from "./server.ts";

const require = createRequire(import.meta.url);

/** anvil's default phrase: its ten accounts hold 10000 ETH each. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

export interface Anvil {
  url: string;
  chainId: number;
  pid: number;
  client: PublicClient;
  /** anvil's funded accounts, with their keys (they sign in the test process, like the service would). */
  accounts: HDAccount[];
  rpc(method: string, params?: unknown[]): Promise<unknown>;
  /** Stops the node (SIGKILL to its pid) and waits for it to exit. */
  close(): Promise<void>;
}

export interface AnvilOptions {
  chainId: number;
  /** How many funded accounts the node makes from ANVIL_MNEMONIC (anvil's default: 10). */
  accounts?: number;
  /** What each holds at start, in ETH (anvil's default: 10000). */
  balanceEth?: number;
  /**
   * false starts anvil without its built-in copy of the deterministic deployment proxy, which
   * startAnvil then installs with anvil_setCode: the path a node without the proxy takes.
   */
  builtInProxy?: boolean;
}

/** The anvil binary of this platform's package (spawned directly, so that its pid is the node's own). */
export function anvilBinary(): string {
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const pkg = require.resolve(`@foundry-rs/anvil-${process.platform}-${arch}/package.json`);
  return join(dirname(pkg), "bin", process.platform === "win32" ? "anvil.exe" : "anvil");
}

const alive = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of alive) if (child.pid) process.kill(child.pid, "SIGKILL");
});

async function rpcCall(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** Waits (at most ~10 s) until the node answers eth_chainId; false when it exited or never answered. */
async function ready(url: string, child: ChildProcess): Promise<boolean> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) return false;
    try {
      await rpcCall(url, "eth_chainId");
      return true;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return false;
}

function kill(child: ChildProcess): Promise<void> {
  alive.delete(child);
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  process.kill(child.pid, "SIGKILL");
  return exited;
}

async function spawnAnvil(options: AnvilOptions): Promise<{ child: ChildProcess; url: string }> {
  // A port free a moment ago can be taken before anvil binds it: a few attempts, each on a new port.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const args = ["--host", "127.0.0.1", "--port", String(port), "--chain-id", String(options.chainId), "--silent"];
    if (options.builtInProxy === false) args.push("--disable-default-create2-deployer");
    if (options.accounts !== undefined) args.push("--mnemonic", ANVIL_MNEMONIC, "--accounts", String(options.accounts));
    if (options.balanceEth !== undefined) args.push("--balance", String(options.balanceEth));
    const child = spawn(anvilBinary(), args, { stdio: "ignore" });
    alive.add(child);
    const url = `http://127.0.0.1:${port}`;
    if (await ready(url, child)) return { child, url };
    await kill(child);
  }
  throw new Error("anvil did not start");
}

/** Starts anvil with the given chain id; the deployment proxy is at DEPLOYMENT_PROXY when this answers. */
export async function startAnvil(options: AnvilOptions): Promise<Anvil> {
  const { child, url } = await spawnAnvil(options);
  const rpc = (method: string, params: unknown[] = []) => rpcCall(url, method, params);
  try {
    if ((await rpc("eth_getCode", [DEPLOYMENT_PROXY, "latest"])) === "0x") {
      await rpc("anvil_setCode", [DEPLOYMENT_PROXY, DEPLOYMENT_PROXY_CODE]);
    }
    const code = (await rpc("eth_getCode", [DEPLOYMENT_PROXY, "latest"])) as Hex;
    if (code !== DEPLOYMENT_PROXY_CODE) throw new Error(`the deployment proxy's code is not the expected one: ${code}`);
  } catch (error) {
    await kill(child);
    throw error;
  }
  const client = createPublicClient({ transport: http(url, { retryCount: 0 }) }) as PublicClient;
  const accounts = Array.from({ length: options.accounts ?? 10 }, (_, i) =>
    mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i }),
  );
  return {
    url,
    chainId: options.chainId,
    pid: child.pid as number,
    client,
    accounts,
    rpc,
    close: () => kill(child),
  };
}

export interface Deployed {
  address: Address;
  abi: Abi;
}

/** Deploys test/support/fixtures/<name>.sol (compiled with solc, once per process) from `from` and waits for it. */
export async function deployFixture(anvil: Anvil, name: string, args: unknown[] = [], from = 0): Promise<Deployed> {
  let made = fixtures.get(name);
  if (!made) {
    made = compileSolidity([`test/support/fixtures/${name}.sol`]).get(name);
    if (!made) throw new Error(`${name} did not compile`);
    fixtures.set(name, made);
  }
  const account = anvil.accounts[from] as HDAccount;
  const wallet = createWalletClient({ account, transport: http(anvil.url, { retryCount: 0 }) });
  const abi = made.abi as Abi;
  const hash = await wallet.deployContract({ abi, bytecode: made.bytecode, args, chain: null });
  const receipt = await anvil.client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
  if (!receipt.contractAddress) throw new Error(`${name} was not deployed`);
  return { address: getAddress(receipt.contractAddress), abi };
}

const fixtures = new Map<string, SolidityOutput>();

/** Sends a transaction from one of anvil's accounts and waits for its receipt (reverted ones too). */
export async function sendFrom(
  anvil: Anvil,
  account: HDAccount,
  request: { to: Address; data?: Hex; value?: bigint; gas?: bigint },
): Promise<{ status: "success" | "reverted"; gasUsed: bigint; effectiveGasPrice: bigint; hash: Hex }> {
  const wallet = createWalletClient({ account, transport: http(anvil.url, { retryCount: 0 }) });
  const hash = await wallet.sendTransaction({ ...request, chain: null });
  const r = await anvil.client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
  return { status: r.status, gasUsed: r.gasUsed, effectiveGasPrice: r.effectiveGasPrice, hash };
}
