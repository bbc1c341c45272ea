// A browser wallet for the Chromium tests: an EIP-1193 provider injected into the page (EIP-6963 and window.ethereum), backed by a local account that signs in the test process and an anvil node.
import type { Page } from "playwright-core";
import { createWalletClient, type Hex, http, type LocalAccount, type TypedDataDefinition } from "viem";

export interface InjectedWalletOptions {
  /** The node's JSON-RPC URL (reads and raw transactions go there). */
  rpcUrl: string;
  /** The chain the node runs; the wallet starts on it unless `startChainId` says otherwise. */
  chainId: number;
  /** The payer's account: it signs here, never in the page. */
  account: LocalAccount;
  /** The chain the wallet is on when the page opens (default `chainId`). */
  startChainId?: number;
  /** The chains the wallet can switch to (default: `chainId` and `startChainId`); any other answers 4902. */
  knownChains?: number[];
  /** How the page finds it: EIP-6963 announcements, window.ethereum, or both (default). */
  discovery?: "eip6963" | "window.ethereum" | "both";
  /** Methods the payer declines (answered 4001), e.g. eth_signTypedData_v4. */
  decline?: string[];
}

export interface InjectedWallet {
  address: Hex;
  /** Every method the page asked for, in order. */
  calls: string[];
  /** The chain the wallet is on now. */
  chainId(): number;
}

/** An EIP-1193 error answer (EIP-1193 §provider errors). */
interface RpcError {
  code: number;
  message: string;
}

type Answer = { result: unknown } | { error: RpcError };

/** Methods the wallet forwards to the node as they are. */
const FORWARDED = new Set([
  "eth_call",
  "eth_getTransactionReceipt",
  "eth_blockNumber",
  "eth_estimateGas",
  "eth_getBalance",
  "eth_getTransactionByHash",
  "eth_gasPrice",
]);

const BINDING = "__injectedWalletRequest";

/** The page side: a provider whose every request crosses to the test process through the binding. */
function providerScript(discovery: NonNullable<InjectedWalletOptions["discovery"]>): string {
  return `(() => {
  const provider = {
    isInjectedTestWallet: true,
    async request(args) {
      const answer = await window[${JSON.stringify(BINDING)}](JSON.stringify(args ?? {}));
      if ("error" in answer) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
      return answer.result;
    },
    on() { return provider; },
    removeListener() { return provider; },
  };
  const discovery = ${JSON.stringify(discovery)};
  if (discovery !== "eip6963") window.ethereum = provider;
  if (discovery === "window.ethereum") return;
  const detail = Object.freeze({
    info: { uuid: "5d4b5a3e-9c0f-4b7e-8f51-0a6f4c1d2e3f", name: "Test Wallet", icon: "data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>", rdns: "test.wallet" },
    provider,
  });
  const announce = () => window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail }));
  window.addEventListener("eip6963:requestProvider", announce);
  announce();
})();`;
}

async function forward(rpcUrl: string, method: string, params: unknown[]): Promise<Answer> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { result?: unknown; error?: RpcError };
  return body.error ? { error: { code: body.error.code, message: body.error.message } } : { result: body.result };
}

/** Parses eth_signTypedData_v4's JSON as a wallet does: EIP712Domain is implied by the domain. */
function typedDataOf(json: string): TypedDataDefinition {
  const parsed = JSON.parse(json) as TypedDataDefinition & { types: Record<string, unknown> };
  const { EIP712Domain: _implied, ...types } = parsed.types;
  return { ...parsed, types } as TypedDataDefinition;
}

/** What the wallet answers one request with. */
function handler(
  options: InjectedWalletOptions,
  wallet: InjectedWallet,
): (method: string, params: unknown[]) => Promise<Answer> {
  const { account, rpcUrl } = options;
  let chainId = options.startChainId ?? options.chainId;
  const known = new Set(options.knownChains ?? [options.chainId, chainId]);
  const declined = new Set(options.decline ?? []);
  const same = (address: unknown) =>
    typeof address === "string" && address.toLowerCase() === account.address.toLowerCase();
  const client = createWalletClient({ account, transport: http(rpcUrl, { retryCount: 0 }) });
  wallet.chainId = () => chainId;
  return async (method, params) => {
    if (declined.has(method)) return { error: { code: 4001, message: "User rejected the request." } };
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return { result: [account.address] };
      case "eth_chainId":
        return { result: `0x${chainId.toString(16)}` };
      case "wallet_switchEthereumChain": {
        const wanted = Number((params[0] as { chainId: string }).chainId);
        if (!known.has(wanted)) return { error: { code: 4902, message: `Unrecognized chain ID ${wanted}.` } };
        chainId = wanted;
        return { result: null };
      }
      case "eth_signTypedData_v4": {
        if (!same(params[0])) return { error: { code: 4100, message: "Not this wallet's account." } };
        return { result: await account.signTypedData(typedDataOf(String(params[1]))) };
      }
      case "eth_sendTransaction": {
        const tx = params[0] as { from: string; to: Hex; data?: Hex; value?: Hex };
        if (!same(tx.from)) return { error: { code: 4100, message: "Not this wallet's account." } };
        const chain = {
          id: chainId,
          name: "local",
          nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
          rpcUrls: { default: { http: [rpcUrl] } },
        };
        const hash = await client.sendTransaction({
          account,
          chain,
          to: tx.to,
          ...(tx.data ? { data: tx.data } : {}),
          ...(tx.value ? { value: BigInt(tx.value) } : {}),
        });
        return { result: hash };
      }
      default:
        if (FORWARDED.has(method)) return forward(rpcUrl, method, params);
        return { error: { code: 4200, message: `The test wallet does not support ${method}.` } };
    }
  };
}

/**
 * Installs the wallet in `page` before its scripts run (call before `page.goto`). Requests cross
 * to this process, where the account signs (typed data, transactions) and the node answers reads.
 */
export async function injectWallet(page: Page, options: InjectedWalletOptions): Promise<InjectedWallet> {
  const wallet: InjectedWallet = { address: options.account.address, calls: [], chainId: () => options.chainId };
  const answer = handler(options, wallet);
  await page.exposeFunction(BINDING, async (json: string): Promise<Answer> => {
    const { method, params } = JSON.parse(json) as { method: string; params?: unknown[] };
    wallet.calls.push(method);
    try {
      return await answer(method, params ?? []);
    } catch (error) {
      return { error: { code: -32603, message: error instanceof Error ? error.message : String(error) } };
    }
  });
  await page.addInitScript(providerScript(options.discovery ?? "both"));
  return wallet;
}
