// The payer's page as HTML (product §13): server-rendered in the payer's language, every value escaped, no inline script or style.
import type { PayStatus } from "../../store/payStatus.ts";
import { FINAL_PAY_STATUSES } from "../../store/payStatus.ts";
import { ASSETS, escapeHtml, framedPage, shell } from "./frame.ts";
import type { Language, MessageKey } from "./messages.ts";
import { message } from "./messages.ts";

// The frame's parts were first written here; the other payer's pages and the tests import them from this module too.
export { escapeHtml, shell, showableLogo } from "./frame.ts";

/** An exact decimal string formatted for the language without passing through a float. */
export function formatDecimal(lang: Language, amount: string, decimals: number): string {
  const format = new Intl.NumberFormat(lang, { maximumFractionDigits: Math.min(decimals, 20) }) as Intl.NumberFormat & {
    format(value: string): string;
  };
  return format.format(amount);
}

export function formatDate(lang: Language, iso: string): string {
  return new Intl.DateTimeFormat(lang, {
    year: "numeric",
    month: "long",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZone: "UTC",
    timeZoneName: "short",
  }).format(new Date(iso));
}

export interface PageOptions {
  lang: Language;
  sandbox: boolean;
  /** `?v=` of the QR code, so that the browser may cache each code for good. */
  qrVersion: string | null;
  /** Live mode with a card provider: a fiat invoice nothing was paid into offers "Pay by card" (product §20). */
  cardCheckout?: boolean;
}

export function renderNotFound(lang: Language): string {
  const t = (key: MessageKey) => escapeHtml(message(lang, key));
  return shell(
    lang,
    message(lang, "notFound"),
    `<main class="card"><h1>${t("notFound")}</h1><p>${t("notFoundText")}</p></main>`,
  );
}

/** The page a browser gets when its address is over the payer's request limit (429, with Retry-After). */
export function renderRateLimited(lang: Language): string {
  const t = (key: MessageKey) => escapeHtml(message(lang, key));
  return shell(
    lang,
    message(lang, "tooManyRequests"),
    `<main class="card"><h1>${t("tooManyRequests")}</h1><p>${t("tooManyRequestsText")}</p></main>`,
  );
}

export function copyButton(lang: Language, label: MessageKey, value: string): string {
  return `<button type="button" class="copy" data-copy="${escapeHtml(value)}" data-copied="${escapeHtml(
    message(lang, "copied"),
  )}" aria-label="${escapeHtml(message(lang, label))}">${escapeHtml(message(lang, "copy"))}</button>`;
}

const SANDBOX_ACTIONS: Readonly<Record<string, readonly string[]>> = {
  pending: ["pay", "unconfirmed", "underpay", "aml"],
  processing: ["pay", "confirm", "underpay", "aml"],
  aml_check: ["clear", "block"],
};

const ZERO = /^0(?:\.0*)?$/;

/** Still taking payments, something arrived, and it does not cover the total yet. */
export function isPartlyPaid(s: Pick<PayStatus, "status" | "amountDue" | "paidAmount">): boolean {
  return (s.status === "pending" || s.status === "processing") && !ZERO.test(s.amountDue) && !ZERO.test(s.paidAmount);
}

/** What every part of the live section reads: the status, the options and the texts in the page's language. */
interface LiveView {
  s: PayStatus;
  options: PageOptions;
  lang: PageOptions["lang"];
  t: (key: MessageKey, values?: Record<string, string>) => string;
  moneyText: (amount: string) => string;
  money: (amount: string) => string;
  merchant: string;
  final: boolean;
  open: boolean;
  partial: boolean;
}

/** The part of the page that changes with the invoice; the page script swaps it when the status changes. */
export function renderLive(s: PayStatus, options: PageOptions): string {
  const { lang } = options;
  const t = (key: MessageKey, values?: Record<string, string>) => escapeHtml(message(lang, key, values));
  const moneyText = (amount: string) => `${formatDecimal(lang, amount, s.decimals)} ${s.currency}`;
  const v: LiveView = {
    s,
    options,
    lang,
    t,
    moneyText,
    money: (amount: string) => escapeHtml(moneyText(amount)),
    merchant: s.merchant.name ?? message(lang, "theMerchant"),
    final: FINAL_PAY_STATUSES.has(s.status),
    open: s.status === "pending" || s.status === "processing",
    partial: isPartlyPaid(s),
  };
  return [
    ...liveStatus(v),
    ...liveAmounts(v),
    ...livePay(v),
    ...liveCountdown(v),
    ...livePayments(v),
    ...liveMerchantLink(v),
    ...liveSandboxTools(v),
  ].join("\n");
}

/** The status line; a partly paid invoice says what is still due and asks for it. */
function liveStatus(v: LiveView): string[] {
  const { s, t, moneyText, partial } = v;
  const parts: string[] = [];
  // A partly paid invoice says what is still due and asks for it, whatever its payments' confirmations.
  const statusText = partial
    ? t("status.partial", {
        paid: moneyText(s.paidAmount),
        total: moneyText(s.finalAmount),
        due: moneyText(s.amountDue),
      })
    : t(`status.${s.status}` as MessageKey);
  parts.push(
    `<p class="status status-${escapeHtml(s.status)}${partial ? " status-partial" : ""}" role="status" data-status="${escapeHtml(
      s.status,
    )}"${partial ? " data-partial" : ""}>${statusText}</p>`,
  );
  return parts;
}

/** What is due, the total and what was paid. */
function liveAmounts(v: LiveView): string[] {
  const { s, lang, t, money, open, partial } = v;
  const parts: string[] = [];
  parts.push(`<dl class="amounts">`);
  if (open) {
    parts.push(
      `<div class="due"><dt>${t(partial ? "stillDue" : "amountDue")}</dt><dd><span class="amount" data-amount>${money(s.amountDue)}</span> ${copyButton(
        lang,
        "copyAmount",
        s.amountDue,
      )}</dd></div>`,
    );
  }
  parts.push(`<div><dt>${t("total")}</dt><dd>${money(s.finalAmount)}</dd></div>`);
  parts.push(`<div><dt>${t("paid")}</dt><dd data-paid>${money(s.paidAmount)}</dd></div>`);
  parts.push(`</dl>`);
  return parts;
}

/** Where to pay: the address (with its QR code), the card checkout, or nothing when no network takes the payment now. */
function livePay(v: LiveView): string[] {
  const { s, options, t, open, merchant } = v;
  if (!open) return [];
  if (s.address !== null && s.network !== null) return [cryptoPay(v, s.address, s.network)];
  // A crypto invoice none of whose networks passes the live gate now: no address to send anything to.
  if (s.network === null) return [`<p class="label unavailable" role="alert">${t("noNetwork", { merchant })}</p>`];
  const parts = [`<p class="label">${t("card")}</p>`];
  if (options.cardCheckout === true && s.status === "pending") {
    // A plain form: it works without the page script, and the script leaves it alone.
    parts.push(
      `<form class="card-checkout" method="post" action="/pay/${escapeHtml(s.id)}/card"><button type="submit" class="button primary">${t("payByCard")}</button></form>`,
    );
  }
  return parts;
}

/** The deposit address on `network` (one of the invoice's payable networks), its QR code and the other networks. */
function cryptoPay(v: LiveView, address: string, network: string): string {
  const { s, options, lang, t } = v;
  const qr =
    s.paymentUri !== null && options.qrVersion !== null
      ? `<img class="qr" width="220" height="220" src="/pay/${escapeHtml(s.id)}/qr.svg?v=${escapeHtml(
          options.qrVersion,
        )}${s.networks.length > 1 ? `&amp;network=${encodeURIComponent(network)}` : ""}" alt="${t("qr")}">`
      : "";
  // Several networks (product §23): plain links, each the same page on that network.
  const others = s.networks.filter((n) => n.name !== network);
  const chooser =
    others.length === 0
      ? ""
      : `<nav class="networks" aria-label="${t("chooseNetwork")}"><p>${t("chooseNetwork")}:</p><ul>${others
          .map(
            (n) =>
              `<li><a href="/pay/${escapeHtml(s.id)}?network=${encodeURIComponent(n.name)}&amp;lang=${lang}" data-network="${escapeHtml(
                n.name,
              )}">${escapeHtml(n.name)}${n.chainId === null ? "" : ` (${t("chain", { id: String(n.chainId) })})`}</a></li>`,
          )
          .join("")}</ul></nav>`;
  return `<section class="pay" aria-label="${t("sendTo", { currency: s.currency })}">
${walletPay(v, network)}${qr}
<p class="label">${t("sendTo", { currency: s.currency })}</p>
<p class="address"><code data-address>${escapeHtml(address)}</code> ${copyButton(lang, "copyAddress", address)}</p>
<p class="network"><span>${t("network")}:</span> <strong>${escapeHtml(network)}${
    s.chainId === null ? "" : ` (${t("chain", { id: String(s.chainId) })})`
  }</strong></p>
<p class="warning">${t("warning", { currency: s.currency, network })}</p>
${chooser}
</section>`;
}

/** The kind of wallet payment `network` offers (issue 45): GET /pay/{id}/status carries its terms while the invoice can expire. */
function authorizationKind(s: PayStatus, network: string): string | null {
  const offer = s.networks.find((n) => n.name === network);
  return offer?.authorization == null || s.expiresAt === null ? null : offer.authorization.kind;
}

/**
 * "Pay with wallet" (issue 45), rendered hidden: the page script shows it once it finds a browser
 * wallet, so that a payer without one sees the page as before. Its progress texts ride along as
 * data attributes, in the page's language, for the script to put in the live region.
 */
function walletPay(v: LiveView, network: string): string {
  const { s, t } = v;
  const kind = authorizationKind(s, network);
  if (kind === null || s.chainId === null) return "";
  const chain = { network, id: String(s.chainId), currency: s.currency };
  const texts: [string, MessageKey][] = [
    ["connect", "wallet.connect"],
    ["switch", "wallet.switch"],
    ["unknown-chain", "wallet.unknownChain"],
    ["approve", "wallet.approve"],
    ["approving", "wallet.approving"],
    ["approval-failed", "wallet.approvalFailed"],
    ["sign", "wallet.sign"],
    ["sending", "wallet.sending"],
    ["accepted", "wallet.accepted"],
    ["unavailable", "wallet.unavailable"],
    ["declined", "wallet.declined"],
    ["failed", "wallet.failed"],
  ];
  const data = texts.map(([name, key]) => ` data-${name}="${t(key, chain)}"`).join("");
  const hint = kind === "permit2" ? t("wallet.hint.permit2", chain) : t("wallet.hint.eip3009");
  return `<div class="wallet" data-wallet data-network="${escapeHtml(network)}" data-chain="${s.chainId}"${data} hidden>
<button type="button" class="button primary" data-wallet-pay>${t("wallet.pay")}</button>
<p class="hint">${hint}</p>
<p class="wallet-status" role="status" data-wallet-status></p>
</div>
`;
}

/** Until when the invoice takes payments. */
function liveCountdown(v: LiveView): string[] {
  const { s, lang, t, final } = v;
  const parts: string[] = [];
  if (!final && s.expiresAt !== null) {
    parts.push(
      `<p class="countdown"><span>${t("expiresIn")}:</span> <time data-expires="${escapeHtml(
        s.expiresAt,
      )}" datetime="${escapeHtml(s.expiresAt)}">${t("expiresAt", { date: formatDate(lang, s.expiresAt) })}</time></p>`,
    );
  }
  return parts;
}

/** Each payment seen, with its confirmations. */
function livePayments(v: LiveView): string[] {
  const { s, t, money } = v;
  const parts: string[] = [];
  if (s.payments.length > 0) {
    const items = s.payments
      .map(
        (p) => `<li class="payment payment-${escapeHtml(p.state)}"><span class="amount">${money(p.amount)}</span>
<span class="state">${t(`state.${p.state}` as MessageKey)}</span>
<span class="confirmations">${t("confirmations", {
          seen: String(p.confirmations),
          required: String(p.requiredConfirmations),
        })}</span>
<progress max="${p.requiredConfirmations}" value="${p.confirmations}" aria-label="${t("confirmations", {
          seen: String(p.confirmations),
          required: String(p.requiredConfirmations),
        })}"></progress>
<code class="tx" title="${t("transaction")}">${escapeHtml(p.txId)}</code></li>`,
      )
      .join("\n");
    parts.push(`<section class="payments"><h2>${t("payments")}</h2><ul>${items}</ul></section>`);
  }
  return parts;
}

/** The way back to the merchant. */
function liveMerchantLink(v: LiveView): string[] {
  const { s, t, merchant, final } = v;
  const parts: string[] = [];
  if (s.redirectUrl !== null) {
    const key: MessageKey =
      s.status === "completed" || s.status === "refund_processing" || s.status === "refunded"
        ? "link.success"
        : final
          ? "link.fail"
          : "link.return";
    // Only http(s) URLs are accepted at invoice creation, so href cannot carry a script scheme.
    parts.push(
      `<p class="merchant-link"><a class="button${final ? " primary" : ""}" href="${escapeHtml(
        s.redirectUrl,
      )}" rel="noopener noreferrer">${t(key, { merchant })}</a></p>`,
    );
  }
  return parts;
}

/** The sandbox's simulation buttons. */
function liveSandboxTools(v: LiveView): string[] {
  const { s, options, lang, t } = v;
  const parts: string[] = [];
  const actions = options.sandbox ? (SANDBOX_ACTIONS[s.status] ?? []) : [];
  if (actions.length > 0) {
    const buttons = actions
      .map(
        (action) =>
          `<form method="post" enctype="application/x-www-form-urlencoded" action="/pay/${escapeHtml(s.id)}/sandbox/${action}?lang=${lang}"><button type="submit" class="button">${t(
            `sandbox.${action}` as MessageKey,
          )}</button></form>`,
      )
      .join("");
    parts.push(
      `<section class="sandbox-tools" aria-label="${t("sandboxTools")}"><h2>${t("sandboxTools")}</h2><div class="row">${buttons}</div></section>`,
    );
  }
  return parts;
}

export function renderPayPage(s: PayStatus, options: PageOptions): string {
  const { lang } = options;
  const t = (key: MessageKey, values?: Record<string, string>) => escapeHtml(message(lang, key, values));
  const merchant = s.merchant.name ?? message(lang, "theMerchant");
  const meta: string[] = [`<span>${t("invoice")} <code>${escapeHtml(s.id)}</code></span>`];
  if (s.orderNo !== null) meta.push(`<span>${t("order")} ${escapeHtml(s.orderNo)}</span>`);
  const final = FINAL_PAY_STATUSES.has(s.status);
  return framedPage({
    lang,
    title: `${message(lang, "payTo", { merchant })}: ${s.finalAmount} ${s.currency}`,
    merchant: s.merchant,
    href: (code) => `/pay/${s.id}?lang=${code}`,
    sandbox: options.sandbox,
    card: `<h1>${t("payTo", { merchant })}</h1>
<p class="meta">${meta.join(" · ")}</p>
${s.description !== null && s.description !== "" ? `<p class="description">${escapeHtml(s.description)}</p>` : ""}
<div id="live" aria-live="polite">
${renderLive(s, options)}
</div>
<p class="hint" data-live-hint hidden>${final ? "" : t("live")}</p>
${final ? "" : `<p class="hint" data-reload-hint>${t("reload")}</p>`}`,
    after: `\n<script src="${ASSETS}/pay.js" defer></script>`,
    bodyAttributes: ` data-invoice="${escapeHtml(s.id)}" data-lang="${lang}"`,
  });
}
