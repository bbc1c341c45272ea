// The payer's page script: live status (server-sent events, polling as fallback), copy buttons, countdown, sandbox buttons, "Pay with wallet".
import { mountWallet } from "./wallet.ts";

const body = document.body;
const invoiceId = body.dataset.invoice ?? "";
const lang = body.dataset.lang ?? "en";
const base = `/pay/${encodeURIComponent(invoiceId)}`;
const FINAL = new Set(["completed", "refund_processing", "refunded", "failed", "expired", "aml_block"]);
const POLL_MS = 3000;

let lastKey = "";
let refreshing = false;
let source: EventSource | null = null;
let pollTimer: number | undefined;

interface StatusBody {
  status: string;
  paidAmount: string;
  amountDue: string;
  payments: { txId: string; state: string; confirmations: number }[];
}

function keyOf(s: StatusBody): string {
  return JSON.stringify([
    s.status,
    s.paidAmount,
    s.amountDue,
    s.payments.map((p) => [p.txId, p.state, p.confirmations]),
  ]);
}

/** The server renders every state in the payer's language: fetch the page again and swap its live part. */
async function refresh(): Promise<void> {
  if (refreshing) return;
  refreshing = true;
  try {
    // The network the payer chose stays chosen (product §23).
    const network = new URLSearchParams(window.location.search).get("network");
    const query = `lang=${encodeURIComponent(lang)}${network === null ? "" : `&network=${encodeURIComponent(network)}`}`;
    const response = await fetch(`${base}?${query}`, { cache: "no-store" });
    if (!response.ok) return;
    const next = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = next.getElementById("live");
    const current = document.getElementById("live");
    if (fresh && current)
      current.replaceChildren(...Array.from(fresh.childNodes).map((n) => document.importNode(n, true)));
    const hint = next.querySelector("[data-live-hint]");
    const hintHere = document.querySelector("[data-live-hint]");
    if (hint && hintHere) hintHere.textContent = hint.textContent;
    tick();
    mountWallet(follow);
  } finally {
    refreshing = false;
  }
}

function onStatus(s: StatusBody): void {
  const key = keyOf(s);
  // The first answer is compared with what the page shows: a change between render and stream counts too.
  const shown = document.querySelector<HTMLElement>("[data-status]")?.dataset.status;
  if (lastKey === "" ? s.status !== shown : key !== lastKey) void refresh();
  lastKey = key;
  if (FINAL.has(s.status)) stop();
}

function stop(): void {
  source?.close();
  source = null;
  if (pollTimer !== undefined) window.clearInterval(pollTimer);
  pollTimer = undefined;
}

function poll(): void {
  if (pollTimer !== undefined) return;
  pollTimer = window.setInterval(async () => {
    try {
      const response = await fetch(`${base}/status`, { cache: "no-store" });
      if (response.ok) onStatus((await response.json()) as StatusBody);
    } catch {
      // Offline for a moment: the next tick tries again.
    }
  }, POLL_MS);
}

function listen(): void {
  const current = document.querySelector<HTMLElement>("[data-status]")?.dataset.status ?? "";
  if (FINAL.has(current)) return;
  if (typeof EventSource !== "function") {
    poll();
    return;
  }
  source = new EventSource(`${base}/events`);
  source.addEventListener("status", (event) =>
    onStatus(JSON.parse((event as MessageEvent<string>).data) as StatusBody),
  );
  // Refused (too many streams) or closed for good: fall back to polling the status.
  source.addEventListener("error", () => {
    if (source?.readyState === EventSource.CLOSED) {
      source = null;
      poll();
    }
  });
}

/** After a signed payment is accepted: make sure the page is following the invoice (the stream may have closed). */
function follow(): void {
  if (source === null && pollTimer === undefined) listen();
}

function pad(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** The countdown to expires_at, in the payer's clock; the server-rendered date stays as its title. */
function tick(): void {
  for (const el of Array.from(document.querySelectorAll<HTMLElement>("time[data-expires]"))) {
    const end = Date.parse(el.dataset.expires ?? "");
    if (Number.isNaN(end)) continue;
    if (!el.title) el.title = el.textContent ?? "";
    const left = Math.max(0, Math.floor((end - Date.now()) / 1000));
    const h = Math.floor(left / 3600);
    const m = Math.floor((left % 3600) / 60);
    el.textContent = `${h > 0 ? `${h}:` : ""}${pad(m)}:${pad(left % 60)}`;
    el.classList.toggle("soon", left < 300);
  }
}

async function copy(button: HTMLButtonElement): Promise<void> {
  const value = button.dataset.copy ?? "";
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(value);
  } catch {
    // No clipboard permission: select the value so the payer can copy it by hand.
    const target = button.parentElement?.querySelector("code, .amount");
    if (target) window.getSelection()?.selectAllChildren(target);
    return;
  }
  button.textContent = button.dataset.copied ?? label;
  button.classList.add("done");
  window.setTimeout(() => {
    button.textContent = label;
    button.classList.remove("done");
  }, 1500);
}

document.addEventListener("click", (event) => {
  const button = (event.target as Element | null)?.closest<HTMLButtonElement>("button.copy");
  if (button) void copy(button);
});

// Sandbox buttons post without leaving the page; the live stream shows what they did.
document.addEventListener("submit", async (event) => {
  const form = event.target as HTMLFormElement;
  if (!form.action.includes("/sandbox/")) return;
  event.preventDefault();
  const buttons = Array.from(form.querySelectorAll("button"));
  for (const b of buttons) b.disabled = true;
  try {
    await fetch(form.action, { method: "POST" });
    await refresh();
    if (source === null && pollTimer === undefined) listen();
  } finally {
    for (const b of buttons) b.disabled = false;
  }
});

// Only on an invoice's page (the bundle also serves a subscription's).
if (body.dataset.invoice !== undefined) {
  // The page says it updates by itself only when this script runs; without it, the server's line says to reload.
  document.querySelector("[data-live-hint]")?.removeAttribute("hidden");
  document.querySelector("[data-reload-hint]")?.setAttribute("hidden", "");
  tick();
  window.setInterval(tick, 1000);
  listen();
  mountWallet(follow);
}
