// The payer's side of a payment link, /l/{id} (product §25): GET is the page with the price and a Pay button (never an invoice), POST makes the session's invoice (throttled, bounded) and 303s to its page.
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { ServiceContext } from "../app/context.ts";
import { type LinkVisit, payThroughLink, showPaymentLink } from "../app/paymentLinks.ts";
import { clientAddress } from "./addressLimits.ts";
import { acceptForms } from "./forms.ts";
import { escapeHtml, framedPage, merchantName, shell, textField } from "./pay/frame.ts";
import { type LinkMessageKey, linkMessage } from "./pay/linkMessages.ts";
import { chooseLanguage, type Language, message } from "./pay/messages.ts";
import { formatDecimal } from "./pay/render.ts";
import { PAY_HEADERS } from "./pay.ts";
import { Problem, refusalProblem, sendProblem } from "./problem.ts";
import type { App } from "./routeHost.ts";
import { LangQuery, PaymentLinkIdParams } from "./shapes.ts";
import { setRetryAfter } from "./throttles.ts";

/** The browser session's cookie: random, HttpOnly, only sent to /l/, gone when the browser session ends. */
export const LINK_SESSION_COOKIE = "pl_session";
const SESSION_PATTERN = /^[0-9a-f]{32}$/;

const AmountBody = Type.Object(
  { amount: Type.Optional(Type.String({ maxLength: 64 })) },
  { additionalProperties: false },
);

type LinkRequest = FastifyRequest<{ Params: { id: string }; Querystring: { lang?: string | undefined } }>;
type Shown = Exclude<LinkVisit, { kind: "invoice" | "not_found" | "refused" }>;

/** The session named by the request's cookie, or null. */
function cookieSession(request: FastifyRequest): string | null {
  const header = request.headers.cookie ?? "";
  for (const part of header.split(";", 50)) {
    const [name, value] = part.trim().split("=", 2);
    if (name === LINK_SESSION_COOKIE && value !== undefined && SESSION_PATTERN.test(value)) return value;
  }
  return null;
}

/** Sets the browser session the Pay button made an invoice for (a look sets nothing). */
function setBrowserSession(reply: FastifyReply, session: string, secure: boolean): void {
  reply.header(
    "set-cookie",
    `${LINK_SESSION_COOKIE}=${session}; Path=/l/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`,
  );
}

/** The Pay form: the fixed price, or the amount field with its bounds and inline error. */
function payForm(lang: Language, visit: Extract<LinkVisit, { kind: "page" }>, amount: string | null): string {
  const { link } = visit;
  const t = (key: LinkMessageKey, values?: Record<string, string>) => linkMessage(lang, key, values);
  // The link's amounts are exact decimals of its currency: formatted as they are, never rounded.
  const money = (value: string) => `${formatDecimal(lang, value, 20)} ${link.currency}`;
  const action = `/l/${escapeHtml(link.id)}?lang=${lang}`;
  if (link.amount !== null) {
    return `<dl class="amounts"><div class="due"><dt>${escapeHtml(t("linkPrice"))}</dt><dd><span class="amount" data-amount>${escapeHtml(
      money(link.amount),
    )}</span></dd></div></dl>
<form method="post" action="${action}" class="form-actions"><button type="submit" class="button primary">${escapeHtml(
      t("linkPayButton"),
    )}</button></form>`;
  }
  const bounds = { min: link.min_amount ?? "", max: link.max_amount ?? "", currency: link.currency };
  return `<form method="post" action="${action}" novalidate>${textField({
    name: "amount",
    label: t("linkAmount", { currency: link.currency }),
    hint: t("linkBounds", bounds),
    error: visit.error === null ? null : t("linkAmountInvalid", bounds),
    ...(amount !== null ? { value: amount } : {}),
    attributes: `required inputmode="decimal" maxlength="64" autocomplete="off"`,
  })}<div class="form-actions"><button type="submit" class="button primary">${escapeHtml(
    t("linkContinue"),
  )}</button></div></form>`;
}

/** The card of a page that cannot take the payment (inactive, suspended, busy): why, and what to do. */
function reasonCard(lang: Language, visit: Shown): string {
  const t = (key: LinkMessageKey, values?: Record<string, string>) => escapeHtml(linkMessage(lang, key, values));
  if (visit.kind === "inactive") return `<h1>${t("linkInactive")}</h1><p>${t("linkInactiveText")}</p>`;
  if (visit.kind === "suspended") return `<h1>${t("linkSuspended")}</h1><p>${t("linkSuspendedText")}</p>`;
  if (visit.kind === "busy") {
    const minutes = String(Math.max(1, Math.ceil(visit.retryAfterSeconds / 60)));
    return `<h1>${t("linkBusy")}</h1><p role="alert">${t("linkBusyText", { minutes })}</p>`;
  }
  return "";
}

function linkPage(lang: Language, visit: Shown, amount: string | null): string {
  const merchant = { name: visit.merchant.name, logo: visit.merchant.logo, whitelabeling: false };
  const name = merchantName(lang, merchant);
  const pay = linkMessage(lang, "linkPay", { merchant: name });
  const card =
    visit.kind === "page"
      ? `<h1>${escapeHtml(pay)}</h1>${
          visit.link.description ? `<p class="description">${escapeHtml(visit.link.description)}</p>` : ""
        }${payForm(lang, visit, amount)}`
      : reasonCard(lang, visit);
  return framedPage({
    lang,
    title: visit.kind === "page" ? pay : name,
    merchant,
    href: (code) => `/l/${visit.link.id}?lang=${code}`,
    card,
  });
}

/** What a refusal is for a client that asked for JSON rather than a page. */
function visitProblem(visit: LinkVisit): Problem | null {
  if (visit.kind === "not_found") return new Problem("payment_link_not_found", "No payment link with this id.");
  if (visit.kind === "inactive") return new Problem("payment_link_inactive", "This payment link is no longer active.");
  if (visit.kind === "suspended")
    return new Problem("merchant_not_active", "The merchant is suspended: this link takes no payment for now.");
  if (visit.kind === "busy") {
    return new Problem(
      "rate_limited",
      "Too many invoices through this link right now; retry after the time in Retry-After.",
      undefined,
      visit.retryAfterSeconds,
    );
  }
  return null;
}

/** A client that asked for JSON and not for a page (a browser always accepts text/html). */
function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? "";
  return !accept.includes("text/html") && accept.includes("json");
}

function answer(request: LinkRequest, reply: FastifyReply, visit: LinkVisit, amount: string | null) {
  // The link's invoice refused by CreateInvoice's rules: answered as CreateInvoice answers it.
  if (visit.kind === "refused") throw refusalProblem(visit.refusal);
  const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
  reply.headers(PAY_HEADERS);
  if (visit.kind === "invoice") return reply.redirect(`${visit.invoiceUrl}?lang=${lang}`, 303);
  if (visit.kind === "busy") setRetryAfter(reply, visit.retryAfterSeconds);
  const problem = visitProblem(visit);
  if (problem !== null && wantsJson(request)) return sendProblem(reply, problem);
  const html =
    visit.kind === "not_found"
      ? shell(
          lang,
          linkMessage(lang, "linkTitle"),
          `<main class="card"><h1>${escapeHtml(message(lang, "notFound"))}</h1><p>${escapeHtml(
            linkMessage(lang, "linkNotFound"),
          )}</p></main>`,
        )
      : linkPage(lang, visit, amount);
  const status = problem?.status ?? (visit.kind === "page" && visit.error !== null ? 400 : 200);
  return reply.code(status).type("text/html; charset=utf-8").send(html);
}

export function registerPaymentLinkPage(app: App, ctx: ServiceContext): void {
  app.register(async (plugin) => {
    const scope = plugin as unknown as App;
    acceptForms(scope);
    scope.get(
      "/l/:id",
      { schema: { hide: true, params: PaymentLinkIdParams, querystring: LangQuery } },
      async (request, reply) =>
        answer(request, reply, await showPaymentLink(ctx, request.params.id, cookieSession(request)), null),
    );
    scope.post(
      "/l/:id",
      { schema: { hide: true, params: PaymentLinkIdParams, querystring: LangQuery, body: AmountBody } },
      async (request, reply) => {
        const amount = request.body?.amount ?? null;
        const visitor = { session: cookieSession(request), address: clientAddress(request) };
        const visit = await payThroughLink(ctx, request.params.id, visitor, amount);
        if (visit.kind === "invoice" && visit.session !== undefined) {
          setBrowserSession(reply, visit.session, ctx.config.publicBaseUrl.startsWith("https:"));
        }
        return answer(request, reply, visit, amount);
      },
    );
  });
}
