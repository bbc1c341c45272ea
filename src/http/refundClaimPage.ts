// The payer's refund claim page /refund/{token} (product §25): GET shows the refund and a form for an address, POST claims it (form: a page; JSON: the refund).

import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import { type ClaimView, claimRefund, readClaim } from "../app/claimRefund.ts";
import type { ServiceContext } from "../app/context.ts";
import { payoutRailPolicy } from "../app/payoutProcessors.ts";
import { formatAmount } from "../domain/money.ts";
import type { App } from "./app.ts";
import { acceptForms, isFormPost } from "./forms.ts";
import { type LinkMessageKey, linkMessage } from "./pay/linkMessages.ts";
import { chooseLanguage, type Language } from "./pay/messages.ts";
import { escapeHtml, formatDate, formatDecimal, shell } from "./pay/render.ts";
import { PAY_HEADERS } from "./pay.ts";
import { PublicRefundRequest } from "./payoutViews.ts";
import { Problem } from "./problem.ts";
import { problems } from "./schemas.ts";
import { LangQuery } from "./shapes.ts";

const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 100 }) });
const ClaimBody = Type.Object(
  { address: Type.String({ minLength: 1, maxLength: 200, description: "Where the payer wants the refund" }) },
  { additionalProperties: false },
);

function claimCard(lang: Language, token: string, claim: ClaimView | null, error: string | null): string {
  const t = (key: LinkMessageKey, values?: Record<string, string>) => escapeHtml(linkMessage(lang, key, values));
  if (claim === null) return `<main class="card"><h1>${t("claimTitle")}</h1><p>${t("claimNotFound")}</p></main>`;
  const merchant = claim.merchantName ?? "—";
  const amount = formatAmount(claim.payoutMinor, claim.decimals);
  const parts = [
    `<h1>${t("claimFrom", { merchant })}</h1>`,
    `<dl class="amounts"><div class="due"><dt>${t("claimYouReceive")}</dt><dd class="amount">${escapeHtml(
      formatDecimal(lang, amount, claim.decimals),
    )} ${escapeHtml(claim.currency)}</dd></div></dl>`,
  ];
  if (claim.status === "expired") {
    parts.push(`<p class="status status-expired" role="status" data-status="expired">${t("claimExpired")}</p>`);
  } else if (claim.status === "claimed") {
    const key = claim.refund.status === "completed" ? "claimCompleted" : "claimClaimed";
    parts.push(
      `<p class="status status-${claim.refund.status}" role="status" data-status="claimed">${t(key, {
        address: claim.address ?? "",
      })}</p>`,
    );
  } else {
    if (error !== null) parts.push(`<p class="warning" role="alert">${escapeHtml(error)}</p>`);
    parts.push(
      `<form method="post" action="/refund/${escapeHtml(token)}?lang=${lang}" class="pay">` +
        `<label class="label" for="address">${t("claimAddress", { currency: claim.currency, network: claim.network })}</label>` +
        `<input id="address" name="address" required maxlength="200" autocomplete="off" spellcheck="false" placeholder="0x…">` +
        `<p class="warning">${t("claimWarning")}</p>` +
        `<button type="submit" class="button">${t("claimSubmit")}</button></form>`,
      `<p class="hint">${t("claimBefore", { date: formatDate(lang, claim.expiresAt) })}</p>`,
    );
  }
  return `<main class="card">${parts.join("")}</main>`;
}

function sendPage(
  reply: FastifyReply,
  status: number,
  lang: Language,
  token: string,
  claim: ClaimView | null,
  error: string | null = null,
) {
  const html = shell(lang, linkMessage(lang, "claimTitle"), claimCard(lang, token, claim, error));
  return reply.code(status).headers(PAY_HEADERS).type("text/html; charset=utf-8").send(html);
}

function pageStatus(claim: ClaimView | null): number {
  if (claim === null) return 404;
  return claim.status === "expired" ? 410 : 200;
}

export function registerRefundClaimPage(app: App, ctx: ServiceContext): void {
  app.register(async (plugin) => {
    const scope = plugin as unknown as App;
    acceptForms(scope);
    scope.get(
      "/refund/:token",
      { schema: { hide: true, params: TokenParams, querystring: LangQuery } },
      async (request, reply) => {
        const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
        const claim = await readClaim(ctx.store, request.params.token);
        return sendPage(reply, pageStatus(claim), lang, request.params.token, claim);
      },
    );
    scope.post(
      "/refund/:token",
      {
        schema: {
          operationId: "ClaimRefund",
          tags: ["extensions"],
          summary: "The payer claims a refund at its claim link with an address (no key: the token is the capability)",
          security: [],
          params: TokenParams,
          querystring: LangQuery,
          body: ClaimBody,
          response: {
            200: Type.Object({ request: PublicRefundRequest }, { additionalProperties: false }),
            ...problems(400, 404, 409, 410, 429),
          },
        },
      },
      async (request, reply) => {
        const { token } = request.params;
        const claimed = await claimRefund(ctx, token, request.body.address, payoutRailPolicy(ctx));
        if (isFormPost(request.headers["content-type"])) {
          const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
          if (claimed.ok)
            return reply.headers(PAY_HEADERS).redirect(`/refund/${encodeURIComponent(token)}?lang=${lang}`, 303);
          const claim = await readClaim(ctx.store, token);
          const code = claimed.refusal.code;
          const invalid = code === "invalid_address" || code === "destination_screened";
          const error =
            code === "destination_screened"
              ? linkMessage(lang, "claimScreened", {})
              : invalid
                ? linkMessage(lang, "claimInvalidAddress", { detail: claimed.refusal.detail })
                : null;
          return sendPage(reply, invalid ? 400 : pageStatus(claim), lang, token, claim, error);
        }
        if (!claimed.ok) {
          const { code, detail, pointer } = claimed.refusal;
          throw new Problem(code, detail, [{ pointer, detail }]);
        }
        return { request: claimed.value };
      },
    );
  });
}
