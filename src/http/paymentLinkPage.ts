// The payer's side of a payment link, /l/{id} (product §25): one invoice per browser session (a cookie), 303 to its page; an open amount is a form first; an inactive link is 410.
import { randomBytes } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { ServiceContext } from "../app/context.ts";
import { type LinkVisit, visitPaymentLink } from "../app/paymentLinks.ts";
import type { App } from "./app.ts";
import { acceptForms } from "./forms.ts";
import { type LinkMessageKey, linkMessage } from "./pay/linkMessages.ts";
import { chooseLanguage, type Language } from "./pay/messages.ts";
import { escapeHtml, shell } from "./pay/render.ts";
import { PAY_HEADERS } from "./pay.ts";
import { LangQuery, PaymentLinkIdParams } from "./shapes.ts";

/** The browser session's cookie: random, HttpOnly, only sent to /l/, gone when the browser session ends. */
export const LINK_SESSION_COOKIE = "pl_session";
const SESSION_PATTERN = /^[0-9a-f]{32}$/;

const AmountBody = Type.Object({ amount: Type.String({ maxLength: 64 }) }, { additionalProperties: false });

/** The session named by the request's cookie, or a new one (set on the answer). */
function browserSession(request: FastifyRequest, reply: FastifyReply, secure: boolean): string {
  const header = request.headers.cookie ?? "";
  for (const part of header.split(";", 50)) {
    const [name, value] = part.trim().split("=", 2);
    if (name === LINK_SESSION_COOKIE && value !== undefined && SESSION_PATTERN.test(value)) return value;
  }
  const session = randomBytes(16).toString("hex");
  reply.header(
    "set-cookie",
    `${LINK_SESSION_COOKIE}=${session}; Path=/l/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`,
  );
  return session;
}

function linkPage(lang: Language, id: string, visit: Exclude<LinkVisit, { kind: "invoice" }>): string {
  const t = (key: LinkMessageKey, values?: Record<string, string>) => escapeHtml(linkMessage(lang, key, values));
  if (visit.kind === "not_found")
    return `<main class="card"><h1>${t("linkTitle")}</h1><p>${t("linkNotFound")}</p></main>`;
  if (visit.kind === "inactive") {
    return `<main class="card"><h1>${t("linkInactive")}</h1><p>${t("linkInactiveText")}</p></main>`;
  }
  const { link } = visit;
  const bounds = { min: link.min_amount ?? "", max: link.max_amount ?? "", currency: link.currency };
  return `<main class="card"><h1>${t("linkTitle")}</h1>${
    link.description ? `<p class="description">${escapeHtml(link.description)}</p>` : ""
  }${visit.error ? `<p class="warning" role="alert">${t("linkAmountInvalid", bounds)}</p>` : ""}<form method="post" action="/l/${escapeHtml(
    id,
  )}?lang=${lang}" class="pay"><label class="label" for="amount">${t("linkAmount", {
    currency: link.currency,
  })}</label><input id="amount" name="amount" required inputmode="decimal" maxlength="64" autocomplete="off"><p class="hint">${t(
    "linkBounds",
    bounds,
  )}</p><button type="submit" class="button">${t("linkContinue")}</button></form></main>`;
}

async function answerVisit(
  ctx: ServiceContext,
  request: FastifyRequest<{ Params: { id: string }; Querystring: { lang?: string | undefined } }>,
  reply: FastifyReply,
  amount: string | null,
) {
  const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
  const session = browserSession(request, reply, ctx.config.publicBaseUrl.startsWith("https:"));
  const visit = await visitPaymentLink(ctx, request.params.id, session, amount);
  if (visit.kind === "invoice") return reply.headers(PAY_HEADERS).redirect(`${visit.invoiceUrl}?lang=${lang}`, 303);
  const status = visit.kind === "not_found" ? 404 : visit.kind === "inactive" ? 410 : visit.error ? 400 : 200;
  const html = shell(lang, linkMessage(lang, "linkTitle"), linkPage(lang, request.params.id, visit));
  return reply.code(status).headers(PAY_HEADERS).type("text/html; charset=utf-8").send(html);
}

export function registerPaymentLinkPage(app: App, ctx: ServiceContext): void {
  app.register(async (plugin) => {
    const scope = plugin as unknown as App;
    acceptForms(scope);
    scope.get(
      "/l/:id",
      { schema: { hide: true, params: PaymentLinkIdParams, querystring: LangQuery } },
      (request, reply) => answerVisit(ctx, request, reply, null),
    );
    scope.post(
      "/l/:id",
      { schema: { hide: true, params: PaymentLinkIdParams, querystring: LangQuery, body: AmountBody } },
      (request, reply) => answerVisit(ctx, request, reply, request.body.amount),
    );
  });
}
