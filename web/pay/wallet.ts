// "Pay with wallet" on the payer's page (issue 45): finds a browser wallet (EIP-6963, else window.ethereum), puts it on the invoice's chain, asks for one signature and posts it.

export interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

interface TypedData {
  domain: Record<string, unknown>;
  types: Record<string, unknown>;
  primaryType: string;
  message: Record<string, unknown>;
}

/** A network's `authorization` in GET /pay/{id}/status (docs: the API contract of issue 45). */
type Authorization =
  | { kind: "eip3009"; typedData: TypedData }
  | { kind: "permit2"; permit2: string; token: string; amount: string; typedData: TypedData };

/** What POST /pay/{id}/authorization takes besides the network. */
type Signed = Record<string, string>;

/** A wallet's refusal or failure as EIP-1193 reports it. */
interface WalletError {
  code?: number;
  message?: string;
  data?: { originalError?: { code?: number } };
}

/** What the payer reads in the live region; thrown to stop the flow with that text. */
class Said extends Error {}

/** How long wallets have to announce themselves: they answer the request at once, this only bounds a slow one. */
const DISCOVERY_MS = 500;
/** The approval's receipt is polled this many times, a second apart. */
const RECEIPT_TRIES = 180;
const USER_REJECTED = 4001;
const UNKNOWN_CHAIN = 4902;

let found: Promise<Eip1193 | null> | undefined;
/** What the live region says, kept across the swaps of the live part; `done` once a signature was accepted. */
let said: { text: string; error: boolean; done: boolean } | undefined;
let busy = false;

/** The browser wallet: the first EIP-6963 announcement, else window.ethereum; null when there is none (also used by the subscription page). */
export function discover(): Promise<Eip1193 | null> {
  return new Promise((resolve) => {
    const fallback = (window as { ethereum?: Eip1193 }).ethereum;
    const finish = (provider: Eip1193 | null | undefined) => {
      window.removeEventListener("eip6963:announceProvider", onAnnounce);
      window.clearTimeout(timer);
      resolve(provider ?? (typeof fallback?.request === "function" ? fallback : null));
    };
    const onAnnounce = (event: Event) => {
      const provider = (event as CustomEvent<{ provider?: Eip1193 }>).detail?.provider;
      // Several wallets: the first to answer is used.
      if (typeof provider?.request === "function") finish(provider);
    };
    const timer = window.setTimeout(() => finish(null), DISCOVERY_MS);
    window.addEventListener("eip6963:announceProvider", onAnnounce);
    window.dispatchEvent(new Event("eip6963:requestProvider"));
  });
}

function show(box: HTMLElement): void {
  const status = box.querySelector<HTMLElement>("[data-wallet-status]");
  const button = box.querySelector<HTMLButtonElement>("[data-wallet-pay]");
  if (status) {
    status.textContent = said?.text ?? "";
    status.classList.toggle("wallet-error", said?.error === true);
  }
  if (button) {
    button.disabled = busy;
  }
  // Once a signature is taken there is nothing more to press, nor to explain.
  for (const el of box.querySelectorAll<HTMLElement>("[data-wallet-pay], .hint")) el.hidden = said?.done === true;
}

function say(box: HTMLElement, name: string): void {
  said = { text: box.dataset[name] ?? "", error: false, done: false };
  // The live part may have been swapped meanwhile: write to the box on the page now.
  const current = document.querySelector<HTMLElement>("[data-wallet]");
  if (current) show(current);
}

const hex = (bytes: Uint8Array) => `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
const word = (address: string) => address.slice(2).toLowerCase().padStart(64, "0");

function randomWord(): string {
  return hex(crypto.getRandomValues(new Uint8Array(32)));
}

async function freshAuthorization(network: string): Promise<Authorization | null> {
  const response = await fetch(`/pay/${encodeURIComponent(document.body.dataset.invoice ?? "")}/status`, {
    cache: "no-store",
  });
  if (!response.ok) return null;
  const body = (await response.json()) as { networks?: { name: string; authorization?: Authorization | null }[] };
  return body.networks?.find((n) => n.name === network)?.authorization ?? null;
}

/** The wallet on the invoice's chain; a chain it does not know is the payer's to add (the page has no RPC URL to offer). */
async function onChain(wallet: Eip1193, box: HTMLElement): Promise<void> {
  const chain = `0x${Number(box.dataset.chain).toString(16)}`;
  if (String(await wallet.request({ method: "eth_chainId" })).toLowerCase() === chain) return;
  say(box, "switch");
  try {
    await wallet.request({ method: "wallet_switchEthereumChain", params: [{ chainId: chain }] });
  } catch (error) {
    const e = error as WalletError;
    if (e.code === UNKNOWN_CHAIN || e.data?.originalError?.code === UNKNOWN_CHAIN) {
      throw new Said(box.dataset.unknownChain ?? "");
    }
    throw error;
  }
}

async function signTyped(wallet: Eip1193, box: HTMLElement, from: string, typedData: TypedData): Promise<string> {
  say(box, "sign");
  return String(await wallet.request({ method: "eth_signTypedData_v4", params: [from, JSON.stringify(typedData)] }));
}

async function signEip3009(wallet: Eip1193, box: HTMLElement, from: string, typedData: TypedData): Promise<Signed> {
  const nonce = randomWord();
  const message = { ...typedData.message, from, nonce };
  const signature = await signTyped(wallet, box, from, { ...typedData, message });
  const { validAfter, validBefore, value } = message as Record<string, string>;
  return { from, signature, nonce, validAfter, validBefore, value };
}

/** Permit2 moves the tokens: it needs the token's allowance once, then one signature per payment. */
async function signPermit2(
  wallet: Eip1193,
  box: HTMLElement,
  from: string,
  offer: Extract<Authorization, { kind: "permit2" }>,
): Promise<Signed> {
  const allowance = await wallet.request({
    method: "eth_call",
    params: [{ from, to: offer.token, data: `0xdd62ed3e${word(from)}${word(offer.permit2)}` }, "latest"],
  });
  if (BigInt(String(allowance) === "0x" ? 0 : String(allowance)) < BigInt(offer.amount)) {
    say(box, "approve");
    const approval = await wallet.request({
      method: "eth_sendTransaction",
      params: [{ from, to: offer.token, data: `0x095ea7b3${word(offer.permit2)}${"f".repeat(64)}` }],
    });
    say(box, "approving");
    await receipt(wallet, box, String(approval));
  }
  // Permit2's nonces are a bitmap: any unused uint256 will do, so a random one needs no read.
  const nonce = BigInt(randomWord()).toString();
  const message = { ...offer.typedData.message, nonce };
  const signature = await signTyped(wallet, box, from, { ...offer.typedData, message });
  return { from, signature, nonce, deadline: String(offer.typedData.message.deadline), value: offer.amount };
}

async function receipt(wallet: Eip1193, box: HTMLElement, hash: string): Promise<void> {
  for (let i = 0; i < RECEIPT_TRIES; i++) {
    const found = (await wallet.request({ method: "eth_getTransactionReceipt", params: [hash] })) as {
      status?: string;
    } | null;
    if (found) {
      if (found.status === "0x1") return;
      break;
    }
    await new Promise((resolve) => window.setTimeout(resolve, 1000));
  }
  throw new Said(box.dataset.approvalFailed ?? "");
}

async function post(box: HTMLElement, network: string, signed: Signed): Promise<void> {
  say(box, "sending");
  const response = await fetch(`/pay/${encodeURIComponent(document.body.dataset.invoice ?? "")}/authorization`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ network, ...signed }),
  });
  if (response.ok) return;
  const problem = (await response.json().catch(() => ({}))) as { detail?: string; title?: string };
  throw new Said((box.dataset.failed ?? "").replace("{error}", problem.detail ?? problem.title ?? response.statusText));
}

async function payWithWallet(wallet: Eip1193, box: HTMLElement, accepted: () => void): Promise<void> {
  const network = box.dataset.network ?? "";
  say(box, "connect");
  const accounts = (await wallet.request({ method: "eth_requestAccounts" })) as string[];
  const from = accounts[0];
  if (from === undefined) throw new Said(box.dataset.declined ?? "");
  await onChain(wallet, box);
  const offer = await freshAuthorization(network);
  if (offer === null) throw new Said(box.dataset.unavailable ?? "");
  const signed =
    offer.kind === "permit2"
      ? await signPermit2(wallet, box, from, offer)
      : await signEip3009(wallet, box, from, offer.typedData);
  await post(box, network, signed);
  said = { text: box.dataset.accepted ?? "", error: false, done: true };
  accepted();
}

function failed(box: HTMLElement, error: unknown): void {
  if (error instanceof Said) {
    said = { text: error.message, error: true, done: false };
    return;
  }
  const e = error as WalletError;
  const text =
    e.code === USER_REJECTED
      ? (box.dataset.declined ?? "")
      : (box.dataset.failed ?? "").replace("{error}", e.message ?? String(error));
  said = { text, error: true, done: false };
}

/**
 * Shows the button when the live part has one and a wallet is found; called again after each swap
 * of the live part, which brings a fresh, hidden box. `accepted` runs once a signature is taken.
 */
export function mountWallet(accepted: () => void): void {
  if (document.querySelector("[data-wallet]") === null) return;
  found ??= discover();
  void found.then((wallet) => {
    const box = document.querySelector<HTMLElement>("[data-wallet]");
    if (box === null || box.dataset.found !== undefined) return;
    // Says the search is over (the page stays as it was without a wallet).
    box.dataset.found = wallet === null ? "none" : "wallet";
    if (wallet === null) return;
    box.hidden = false;
    show(box);
    box.querySelector("[data-wallet-pay]")?.addEventListener("click", async () => {
      if (busy) return;
      busy = true;
      try {
        await payWithWallet(wallet, box, accepted);
      } catch (error) {
        failed(box, error);
      } finally {
        busy = false;
        const current = document.querySelector<HTMLElement>("[data-wallet]");
        if (current) show(current);
      }
    });
  });
}
