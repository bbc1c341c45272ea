// The subscription's page script (/s/{id}, product §29): finds a browser wallet, asks the service for the next periods' typed data, has the wallet sign each (eth_signTypedData_v4) and posts them.
import { discover, type Eip1193 } from "./wallet.ts";

interface TypedData {
  domain: Record<string, unknown>;
  types: Record<string, unknown>;
  primaryType: string;
  message: Record<string, string>;
}

/** GET /s/{id}/authorizations: one typed data per period offered. */
interface Offer {
  network: string;
  authorizations: { period: number; typedData: TypedData }[];
}

interface WalletError {
  code?: number;
  message?: string;
  data?: { originalError?: { code?: number } };
}

/** What the payer reads in the live region; thrown to stop the flow with that text. */
class Said extends Error {}

const USER_REJECTED = 4001;
const UNKNOWN_CHAIN = 4902;
const subscriptionId = document.body.dataset.subscription;
const base = `/s/${encodeURIComponent(subscriptionId ?? "")}`;
let busy = false;

/** The box's text `name` with its `{placeholders}` filled. */
function text(box: HTMLElement, name: string, values: Record<string, string> = {}): string {
  return (box.dataset[name] ?? "").replace(/\{(\w+)\}/g, (whole, key: string) => values[key] ?? whole);
}

function say(box: HTMLElement, said: string, error = false): void {
  const status = box.querySelector<HTMLElement>("[data-wallet-status]");
  if (status === null) return;
  status.textContent = said;
  status.classList.toggle("wallet-error", error);
}

/** The wallet on the subscription's chain; a chain it does not know is the payer's to add. */
async function onChain(wallet: Eip1193, box: HTMLElement): Promise<void> {
  const chain = `0x${Number(box.dataset.chain).toString(16)}`;
  if (String(await wallet.request({ method: "eth_chainId" })).toLowerCase() === chain) return;
  say(box, text(box, "switch"));
  try {
    await wallet.request({ method: "wallet_switchEthereumChain", params: [{ chainId: chain }] });
  } catch (error) {
    const e = error as WalletError;
    if (e.code === UNKNOWN_CHAIN || e.data?.originalError?.code === UNKNOWN_CHAIN)
      throw new Said(text(box, "unknownChain"));
    throw error;
  }
}

async function problemDetail(response: Response): Promise<string> {
  const problem = (await response.json().catch(() => ({}))) as { detail?: string; title?: string };
  return problem.detail ?? problem.title ?? response.statusText;
}

async function offerFor(box: HTMLElement, from: string, periods: string): Promise<Offer> {
  const query = new URLSearchParams({ from, periods, network: box.dataset.network ?? "" });
  const response = await fetch(`${base}/authorizations?${query}`, { cache: "no-store" });
  if (!response.ok) throw new Said(text(box, "failed", { error: await problemDetail(response) }));
  const offer = (await response.json()) as Offer;
  if (offer.authorizations.length === 0) throw new Said(text(box, "unavailable"));
  return offer;
}

/** Each period's typed data signed in turn: the wallet shows each one, with its window and amount. */
async function signAll(wallet: Eip1193, box: HTMLElement, from: string, offer: Offer) {
  const signed = [];
  const total = String(offer.authorizations.length);
  for (const [i, a] of offer.authorizations.entries()) {
    say(box, text(box, "sign", { period: String(a.period), done: String(i + 1), total }));
    const signature = await wallet.request({
      method: "eth_signTypedData_v4",
      params: [from, JSON.stringify(a.typedData)],
    });
    const { nonce, value, validAfter, validBefore } = a.typedData.message;
    signed.push({ period: a.period, nonce, value, validAfter, validBefore, signature: String(signature) });
  }
  return signed;
}

/** The renewals list as the server now renders it, in place of the one shown. */
async function refreshRenewals(): Promise<void> {
  const response = await fetch(`${base}?lang=${encodeURIComponent(document.body.dataset.lang ?? "en")}`, {
    cache: "no-store",
  });
  if (!response.ok) return;
  const next = new DOMParser().parseFromString(await response.text(), "text/html");
  const fresh = next.querySelector("[data-renewals]");
  const current = document.querySelector("[data-renewals]");
  if (fresh && current) current.replaceWith(document.importNode(fresh, true));
}

async function preauthorize(wallet: Eip1193, box: HTMLElement): Promise<void> {
  say(box, text(box, "connect"));
  const accounts = (await wallet.request({ method: "eth_requestAccounts" })) as string[];
  const from = accounts[0];
  if (from === undefined) throw new Said(text(box, "declined"));
  await onChain(wallet, box);
  const periods = box.querySelector<HTMLSelectElement>("select")?.value ?? "1";
  const offer = await offerFor(box, from, periods);
  const authorizations = await signAll(wallet, box, from, offer);
  say(box, text(box, "sending"));
  const response = await fetch(`${base}/authorizations`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ network: offer.network, from, authorizations }),
  });
  if (!response.ok) throw new Said(text(box, "failed", { error: await problemDetail(response) }));
  await refreshRenewals();
  say(box, text(box, "accepted", { count: String(authorizations.length) }));
}

function failed(box: HTMLElement, error: unknown): void {
  if (error instanceof Said) {
    say(box, error.message, true);
    return;
  }
  const e = error as WalletError;
  say(
    box,
    e.code === USER_REJECTED ? text(box, "declined") : text(box, "failed", { error: e.message ?? String(error) }),
    true,
  );
}

/** Shows "Pre-authorize" once a browser wallet is found; without one the page stays as it was. */
async function mount(box: HTMLElement): Promise<void> {
  const wallet = await discover();
  box.dataset.found = wallet === null ? "none" : "wallet";
  if (wallet === null) return;
  box.hidden = false;
  const button = box.querySelector<HTMLButtonElement>("[data-renewal-preauthorize]");
  button?.addEventListener("click", async () => {
    if (busy) return;
    busy = true;
    button.disabled = true;
    try {
      await preauthorize(wallet, box);
    } catch (error) {
      failed(box, error);
    } finally {
      busy = false;
      button.disabled = false;
    }
  });
}

const box = subscriptionId === undefined ? null : document.querySelector<HTMLElement>("[data-renewal-wallet]");
if (box !== null) void mount(box);
