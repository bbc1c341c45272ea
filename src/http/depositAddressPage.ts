// A customer's deposit address page /d/{id} (product §30): the currency, the address with a QR code per live network, whether it is active, and the latest deposits, for the payer; no credentials, the id is the capability.
import QRCode from "qrcode";
import { Type } from "typebox";
import type { ServiceContext } from "../app/context.ts";
import {
  type DepositAddressPageView,
  type DepositPageNetwork,
  depositAddressPageView,
  PAGE_DEPOSITS,
} from "../app/depositAddressPage.ts";
import { type DepositMessageKey, depositMessage } from "./pay/depositMessages.ts";
import { ASSETS, escapeHtml, framedPage, merchantName, shell } from "./pay/frame.ts";
import { chooseLanguage, type Language, message } from "./pay/messages.ts";
import { copyButton, formatDate, formatDecimal } from "./pay/render.ts";
import { PAY_HEADERS } from "./pay.ts";
import type { App } from "./routeHost.ts";
import { LangQuery } from "./shapes.ts";

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

interface PageText {
  lang: Language;
  view: DepositAddressPageView;
  merchant: string;
  t: (key: DepositMessageKey, values?: Record<string, string>) => string;
}

/** "0x1234ab…cdef": enough to match it in a wallet's history; the whole hash is its title and copy. */
export function shortHash(hash: string): string {
  return hash.length <= 16 ? hash : `${hash.slice(0, 8)}…${hash.slice(-6)}`;
}

/** The QR code of a network's URI, inline: the page is drawn once per request, no second route to limit. */
async function qrImage(p: PageText, n: DepositPageNetwork): Promise<string> {
  if (n.uri === null) return "";
  const svg = await QRCode.toString(n.uri, { type: "svg", margin: 2, errorCorrectionLevel: "M" });
  const src = `data:image/svg+xml;base64,${Buffer.from(svg).toString("base64")}`;
  return `<img class="qr" width="200" height="200" src="${src}" alt="${p.t("depQr", { network: n.network })}" data-uri="${escapeHtml(n.uri)}">`;
}

/** One network: its name and chain, the QR code, and the warning to send only this currency there. */
async function networkSection(p: PageText, n: DepositPageNetwork): Promise<string> {
  const chain = n.chainId === null ? "" : ` (${escapeHtml(message(p.lang, "chain", { id: String(n.chainId) }))})`;
  const warning = message(p.lang, "warning", { currency: p.view.currency, network: n.network });
  return `<li class="deposit-network" data-network="${escapeHtml(n.network)}">
<h3>${p.t("depOnNetwork", { network: n.network })}${chain}</h3>
${await qrImage(p, n)}
<p class="warning">${escapeHtml(warning)}</p>
</li>`;
}

/** The address once (it is the same on every network), then each network with its QR code. */
async function where(p: PageText): Promise<string> {
  const { view, lang } = p;
  const values = { currency: view.currency, merchant: p.merchant };
  if (view.networks.length === 0) {
    return `<p class="label unavailable" role="alert" data-networks="none">${p.t("depNoNetwork", values)}</p>`;
  }
  const sections = await Promise.all(view.networks.map((n) => networkSection(p, n)));
  return `<section class="pay" aria-labelledby="deposit-address">
<p class="label" id="deposit-address">${p.t("depAddress", values)}</p>
<p class="address"><code data-address>${escapeHtml(view.address)}</code> ${copyButton(lang, "copyAddress", view.address)}</p>
<h2>${p.t("depNetworks")}</h2>
<ul class="deposit-networks">${sections.join("\n")}</ul>
</section>`;
}

/** The latest deposits, newest first, as a list that reads on a phone (the page shows at most PAGE_DEPOSITS). */
function depositList(p: PageText): string {
  const { view, lang } = p;
  const heading = `<h2 id="deposits">${p.t("depDeposits")}</h2>`;
  if (view.deposits.length === 0) {
    return `<section class="deposits" aria-labelledby="deposits">${heading}<p class="hint" data-deposits="none">${p.t("depNone")}</p></section>`;
  }
  const items = view.deposits
    .map(
      (d) => `<li class="deposit deposit-${escapeHtml(d.status)}" data-status="${escapeHtml(d.status)}">
<p class="deposit-head"><strong class="amount">${escapeHtml(formatDecimal(lang, d.amount, 20))} ${escapeHtml(view.currency)}</strong> <span class="deposit-status">${p.t(`dep.${d.status}` as DepositMessageKey)}</span></p>
<p class="hint"><span class="visually-hidden">${p.t("depNetwork")}: </span>${escapeHtml(d.network)} · <span class="visually-hidden">${p.t("depTx")}: </span><code class="tx" title="${escapeHtml(d.txHash)}">${escapeHtml(shortHash(d.txHash))}</code> · <time datetime="${escapeHtml(d.createdAt)}">${escapeHtml(formatDate(lang, d.createdAt))}</time></p>
</li>`,
    )
    .join("\n");
  return `<section class="deposits" aria-labelledby="deposits">
${heading}
<p class="hint">${p.t("depLatest", { count: String(PAGE_DEPOSITS) })}</p>
<ul class="deposit-list">
${items}
</ul>
</section>`;
}

export async function renderDepositAddressPage(
  lang: Language,
  view: DepositAddressPageView,
  sandbox: boolean,
): Promise<string> {
  const merchant = merchantName(lang, view.merchant);
  const p: PageText = { lang, view, merchant, t: (key, values) => escapeHtml(depositMessage(lang, key, values)) };
  const values = { currency: view.currency, merchant };
  const state = view.active ? "active" : "inactive";
  return framedPage({
    lang,
    title: `${depositMessage(lang, "depHeading", { merchant })}: ${view.currency}`,
    merchant: view.merchant,
    href: (code) => `/d/${view.id}?lang=${code}`,
    sandbox,
    card: `<h1>${p.t("depHeading", { merchant })}</h1>
<p class="meta"><span>${p.t("depTitle")} <code>${escapeHtml(view.id)}</code></span></p>
<p class="status deposit-address-status status-${state}" data-active="${view.active}">${p.t(view.active ? "depActive" : "depInactive")} · ${escapeHtml(view.currency)}</p>
${view.active ? `<p>${p.t("depIntro", values)}</p>` : `<p class="warning" role="note">${p.t("depInactiveText", values)}</p>`}
${await where(p)}
${depositList(p)}`,
    after: `\n<script src="${ASSETS}/pay.js" defer></script>`,
    bodyAttributes: ` data-deposit-address="${escapeHtml(view.id)}" data-lang="${lang}"`,
  });
}

function renderNotFound(lang: Language): string {
  const title = depositMessage(lang, "depNotFound");
  return shell(
    lang,
    title,
    `<main class="card"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message(lang, "notFoundText"))}</p></main>`,
  );
}

export function registerDepositAddressPage(app: App, ctx: ServiceContext): void {
  const sandbox = ctx.config.serviceMode === "sandbox";
  app.get("/d/:id", { schema: { hide: true, params: IdParams, querystring: LangQuery } }, async (request, reply) => {
    const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
    reply.headers(PAY_HEADERS).type("text/html; charset=utf-8");
    reply.header("content-language", lang).header("vary", "accept-language");
    const view = await depositAddressPageView(ctx, request.params.id);
    if (view === null) return reply.code(404).send(renderNotFound(lang));
    return reply.send(await renderDepositAddressPage(lang, view, sandbox));
  });
}
