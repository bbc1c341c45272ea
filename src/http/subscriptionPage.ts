// The subscription's page /s/{id} (product §29): its plan, status, period and open invoice; in live mode with an EIP-3009 token, the next periods' renewals signed ahead (GET their typed data, POST the signatures).
import { Type } from "typebox";
import type { ServiceContext } from "../app/context.ts";
import {
  acceptRenewals,
  type PostedRenewals,
  type RecoversSigner,
  renewalOffer,
} from "../app/renewalAuthorizations.ts";
import { type SubscriptionPageView, subscriptionPageView } from "../app/subscriptionPage.ts";
import { MAX_RENEWAL_PERIODS } from "../domain/renewalAuthorizations.ts";
import { ASSETS, escapeHtml, framedPage, shell } from "./pay/frame.ts";
import { chooseLanguage, type Language, type MessageKey, message } from "./pay/messages.ts";
import { formatDate, formatDecimal } from "./pay/render.ts";
import { type SubscriptionMessageKey, subscriptionMessage } from "./pay/subscriptionMessages.ts";
import { PAY_HEADERS } from "./pay.ts";
import { valueOrProblem } from "./problem.ts";
import type { App } from "./routeHost.ts";
import { LangQuery } from "./shapes.ts";

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
const Address = Type.String({ pattern: "^0x[0-9a-fA-F]{40}$" });
const Uint = Type.String({ pattern: "^[0-9]{1,78}$", description: "A uint256 in decimal" });

const OfferQuery = Type.Object(
  {
    from: Address,
    periods: Type.Integer({ minimum: 1, maximum: MAX_RENEWAL_PERIODS }),
    network: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  },
  { additionalProperties: false },
);

const RenewalsBody = Type.Object(
  {
    network: Type.String({ minLength: 1, maxLength: 32 }),
    from: Address,
    authorizations: Type.Array(
      Type.Object(
        {
          period: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
          nonce: Type.String({ pattern: "^0x[0-9a-fA-F]{64}$" }),
          value: Uint,
          validAfter: Uint,
          validBefore: Uint,
          signature: Type.String({ pattern: "^0x[0-9a-fA-F]{130}$", description: "65 bytes: r, s, v" }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: MAX_RENEWAL_PERIODS },
    ),
  },
  { additionalProperties: false },
);

/** The chain module's signature check (viem), loaded at the first post only. */
const recovers: RecoversSigner = async (authorization, terms, signed) => {
  const { signatureRecovers } = await import("../chain/walletAuthorizations.ts");
  return signatureRecovers(authorization, terms, signed);
};

interface PageText {
  lang: Language;
  t: (key: SubscriptionMessageKey, values?: Record<string, string>) => string;
  money: (amount: string) => string;
}

function textOf(lang: Language, view: SubscriptionPageView): PageText {
  return {
    lang,
    t: (key, values) => escapeHtml(subscriptionMessage(lang, key, values)),
    money: (amount) => `${formatDecimal(lang, amount, view.plan.decimals)} ${view.plan.currency}`,
  };
}

/** "10 USDC every month", "10 USDC every 3 months". */
function priceText(p: PageText, view: SubscriptionPageView): string {
  const { interval, intervalCount } = view.plan;
  const key = `every.${interval}${intervalCount === 1 ? "" : "s"}` as SubscriptionMessageKey;
  return p.t(key, { amount: p.money(view.plan.amount), count: String(intervalCount) });
}

/** Status, plan, price and the current period. */
function summary(p: PageText, view: SubscriptionPageView): string {
  const s = view.subscription;
  const period = p.t("subPeriodRange", {
    period: String(s.period),
    start: formatDate(p.lang, s.currentPeriodStart),
    end: formatDate(p.lang, s.currentPeriodEnd),
  });
  const notes = [
    s.status === "trialing" && s.trialEnd !== null ? p.t("subTrialEnds", { date: formatDate(p.lang, s.trialEnd) }) : "",
    s.cancelAtPeriodEnd && s.status !== "canceled" ? p.t("subEndsAtPeriodEnd") : "",
  ].filter((n) => n !== "");
  return `<p class="status subscription-status status-${escapeHtml(s.status)}" data-status="${escapeHtml(s.status)}">${p.t(
    `sub.${s.status}` as SubscriptionMessageKey,
  )}</p>
<dl class="amounts">
<div><dt>${p.t("subPlan")}</dt><dd>${escapeHtml(view.plan.name)}</dd></div>
<div><dt>${p.t("subPrice")}</dt><dd data-price>${priceText(p, view)}</dd></div>
<div><dt>${p.t("subPeriod")}</dt><dd>${period}</dd></div>
</dl>
${notes.map((n) => `<p class="hint">${n}</p>`).join("\n")}`;
}

/** The invoice the subscription waits to be paid, with the way to its page. */
function openInvoice(p: PageText, view: SubscriptionPageView): string {
  const invoice = view.subscription.openInvoice;
  if (invoice === null) return `<p class="hint" data-open-invoice="none">${p.t("subNothingDue")}</p>`;
  const status = escapeHtml(message(p.lang, `status.${invoice.status}` as MessageKey));
  const what = p.t("subOpenInvoiceText", { period: String(invoice.period), amount: p.money(invoice.amount) });
  return `<section class="open-invoice" aria-labelledby="open-invoice" data-open-invoice="${escapeHtml(invoice.id)}">
<h2 id="open-invoice">${p.t("subOpenInvoice")}</h2>
<p>${what} · <span class="invoice-status">${status}</span></p>
<p class="form-actions"><a class="button primary" href="${escapeHtml(`${invoice.url}?lang=${p.lang}`)}">${p.t("subPayInvoice")}</a></p>
</section>`;
}

/** Each period signed ahead, and where its renewal stands. */
function renewalList(p: PageText, view: SubscriptionPageView): string {
  if (view.renewals.length === 0) return `<section data-renewals hidden></section>`;
  const date = (seconds: string) => formatDate(p.lang, new Date(Number(seconds) * 1000).toISOString());
  const items = view.renewals
    .map(
      (r) =>
        `<li class="renewal renewal-${escapeHtml(r.state)}" data-period="${r.period}" data-state="${escapeHtml(r.state)}"><strong>${p.t(
          "subRenewalPeriod",
          { period: String(r.period) },
        )}</strong>: ${p.t(`renewal.${r.state}` as SubscriptionMessageKey)} <span class="hint">(${p.t(
          "subRenewalWindow",
          { after: date(r.validAfter), before: date(r.validBefore) },
        )})</span></li>`,
    )
    .join("\n");
  return `<section class="renewals" data-renewals><h2>${p.t("subRenewals")}</h2><ul>${items}</ul></section>`;
}

/**
 * "Pre-authorize" (live, an EIP-3009 token), rendered hidden: the page script shows it once it finds
 * a browser wallet. Its progress texts ride along as data attributes, in the page's language.
 */
function preauthorize(p: PageText, view: SubscriptionPageView): string {
  const offer = view.preauthorize;
  if (offer === null) return "";
  const merchant = view.merchant.name ?? message(p.lang, "theMerchant");
  const chain = { network: offer.network, id: String(offer.chainId), currency: offer.currency };
  const w = (key: MessageKey) => escapeHtml(message(p.lang, key, chain));
  const texts: [string, string][] = [
    ["connect", w("wallet.connect")],
    ["switch", w("wallet.switch")],
    ["unknown-chain", w("wallet.unknownChain")],
    ["sending", w("wallet.sending")],
    ["sign", p.t("subSign")],
    ["accepted", p.t("subAccepted")],
    ["unavailable", p.t("subUnavailable")],
    ["declined", p.t("subDeclined")],
    ["failed", p.t("subFailed")],
  ];
  const data = texts.map(([name, text]) => ` data-${name}="${text}"`).join("");
  const options = Array.from({ length: MAX_RENEWAL_PERIODS }, (_, i) => i + 1)
    .map((n) => `<option value="${n}"${n === 3 ? " selected" : ""}>${n}</option>`)
    .join("");
  return `<section class="wallet preauthorize" aria-labelledby="preauthorize" data-renewal-wallet data-network="${escapeHtml(
    offer.network,
  )}" data-chain="${offer.chainId}"${data} hidden>
<h2 id="preauthorize">${p.t("subPreauthorize")}</h2>
<p>${p.t("subPreauthorizeText", { amount: p.money(view.plan.amount) })}</p>
<div class="field"><label for="periods">${p.t("subPeriods")}</label><select id="periods" name="periods">${options}</select></div>
<button type="button" class="button primary" data-renewal-preauthorize>${p.t("subPreauthorizeButton")}</button>
<p class="hint">${p.t("subRevokeHint", { merchant: escapeHtml(merchant) })}</p>
<p class="wallet-status" role="status" data-wallet-status></p>
</section>`;
}

export function renderSubscriptionPage(lang: Language, view: SubscriptionPageView, sandbox: boolean): string {
  const p = textOf(lang, view);
  const merchant = view.merchant.name ?? message(lang, "theMerchant");
  const s = view.subscription;
  return framedPage({
    lang,
    title: `${subscriptionMessage(lang, "subHeading", { merchant })}: ${view.plan.name}`,
    merchant: view.merchant,
    href: (code) => `/s/${s.id}?lang=${code}`,
    sandbox,
    card: `<h1>${p.t("subHeading", { merchant })}</h1>
<p class="meta"><span>${p.t("subTitle")} <code>${escapeHtml(s.id)}</code></span></p>
${summary(p, view)}
${openInvoice(p, view)}
${renewalList(p, view)}
${sandbox ? "" : preauthorize(p, view)}`,
    after: `\n<script src="${ASSETS}/pay.js" defer></script>`,
    bodyAttributes: ` data-subscription="${escapeHtml(s.id)}" data-lang="${lang}"`,
  });
}

function renderNotFound(lang: Language): string {
  const title = subscriptionMessage(lang, "subNotFound");
  return shell(
    lang,
    title,
    `<main class="card"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message(lang, "notFoundText"))}</p></main>`,
  );
}

export function registerSubscriptionPage(app: App, ctx: ServiceContext): void {
  const sandbox = ctx.config.serviceMode === "sandbox";
  app.get("/s/:id", { schema: { hide: true, params: IdParams, querystring: LangQuery } }, async (request, reply) => {
    const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
    reply.headers(PAY_HEADERS).type("text/html; charset=utf-8");
    reply.header("content-language", lang).header("vary", "accept-language");
    const view = await subscriptionPageView(ctx, request.params.id);
    if (view === null) return reply.code(404).send(renderNotFound(lang));
    return reply.send(renderSubscriptionPage(lang, view, sandbox));
  });
  app.get(
    "/s/:id/authorizations",
    { schema: { hide: true, params: IdParams, querystring: OfferQuery } },
    async (request, reply) => {
      const { from, periods, network } = request.query;
      const offer = valueOrProblem(await renewalOffer(ctx, request.params.id, { from, periods, network }));
      return reply.headers(PAY_HEADERS).send(offer);
    },
  );
  app.post(
    "/s/:id/authorizations",
    { schema: { hide: true, params: IdParams, body: RenewalsBody } },
    async (request, reply) => {
      const body = request.body;
      const posted: PostedRenewals = {
        network: body.network,
        from: body.from,
        authorizations: body.authorizations.map((a) => ({
          ...a,
          value: BigInt(a.value),
          validAfter: BigInt(a.validAfter),
          validBefore: BigInt(a.validBefore),
        })),
      };
      const stored = valueOrProblem(await acceptRenewals(ctx, request.params.id, posted, recovers));
      return reply.headers(PAY_HEADERS).send({ authorizations: stored });
    },
  );
}
