// The payer's refund claim page /refund/{token} (product §25): GET shows the refund and a form for an address, POST claims it (form or a browser: a page; JSON: the refund).

import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { type ClaimView, claimRefund, readClaim } from "../app/claimRefund.ts";
import type { ServiceContext } from "../app/context.ts";
import { payoutRailPolicy } from "../app/payoutProcessors.ts";
import { formatAmount } from "../domain/money.ts";
import { DepositRefund } from "./depositAddressShapes.ts";
import { acceptForms, asksForHtml } from "./forms.ts";
import { escapeHtml, framedPage, languageSwitcher, shell, textField } from "./pay/frame.ts";
import { type LinkMessageKey, linkMessage } from "./pay/linkMessages.ts";
import { chooseLanguage, type Language, message } from "./pay/messages.ts";
import { formatDate, formatDecimal } from "./pay/render.ts";
import { PAY_HEADERS } from "./pay.ts";
import { PublicRefundRequest } from "./payoutViews.ts";
import { loggedProblem, noteAnsweredProblem, type Problem, refusalProblem, sendProblem } from "./problem.ts";
import type { App } from "./routeHost.ts";
import { problems } from "./schemas.ts";
import { LangQuery } from "./shapes.ts";

const TOKEN_MAX_LENGTH = 100;
const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: TOKEN_MAX_LENGTH }) });
const ClaimBody = Type.Object(
  { address: Type.String({ minLength: 1, maxLength: 200, description: "Where the payer wants the refund" }) },
  { additionalProperties: false },
);

/** What the page says beside the claim: about the address field, or about the claim itself (plain text). */
type Reason = { field: string; address: string } | { claim: string } | null;

interface ClaimPage {
  lang: Language;
  token: string;
  claim: ClaimView | null;
  reason: Reason;
  sandbox: boolean;
}

function claimForm(page: ClaimPage, claim: ClaimView): string {
  const { lang, token, reason } = page;
  const t = (key: LinkMessageKey, values?: Record<string, string>) => escapeHtml(linkMessage(lang, key, values));
  const field = reason !== null && "field" in reason ? reason : null;
  const address = textField({
    name: "address",
    label: linkMessage(lang, "claimAddress", { currency: claim.currency, network: claim.network }),
    hint: linkMessage(lang, "claimControl", { network: claim.network }),
    error: field?.field ?? null,
    ...(field !== null ? { value: field.address } : {}),
    attributes: `required maxlength="200" autocomplete="off" autocapitalize="off" spellcheck="false" placeholder="0x…"`,
  });
  return `<form method="post" action="/refund/${escapeHtml(token)}?lang=${lang}" class="pay">${address}<p class="warning">${t(
    "claimWarning",
  )}</p><p class="form-actions"><button type="submit" class="button primary">${t("claimSubmit")}</button></p></form>
<p class="hint">${t("claimBefore", { date: formatDate(lang, claim.expiresAt) })}</p>`;
}

/** Where the claim stands: expired, claimed (being sent or sent), or a reason it could not be claimed now. */
function claimState(page: ClaimPage, claim: ClaimView): string {
  const t = (key: LinkMessageKey, values?: Record<string, string>) => escapeHtml(linkMessage(page.lang, key, values));
  const reason = page.reason !== null && "claim" in page.reason ? page.reason.claim : null;
  if (claim.status === "expired") {
    return `<p class="status status-expired" role="alert" data-status="expired">${t("claimExpired")}</p>`;
  }
  if (claim.status === "claimed") {
    const key = claim.refundStatus === "completed" ? "claimCompleted" : "claimClaimed";
    return `<p class="status status-${escapeHtml(claim.refundStatus)}" role="${reason === null ? "status" : "alert"}" data-status="claimed">${t(
      key,
      { address: claim.address ?? "" },
    )}</p>`;
  }
  const alert = reason === null ? "" : `<p class="status status-failed" role="alert">${escapeHtml(reason)}</p>`;
  return `${alert}${claimForm(page, claim)}`;
}

function claimCard(page: ClaimPage, claim: ClaimView): string {
  const { lang } = page;
  const t = (key: LinkMessageKey, values?: Record<string, string>) => escapeHtml(linkMessage(lang, key, values));
  const merchant = claim.merchant.name ?? message(lang, "theMerchant");
  const amount = formatAmount(claim.payoutMinor, claim.decimals);
  return `<h1>${t("claimFrom", { merchant })}</h1>
<dl class="amounts"><div class="due"><dt>${t("claimYouReceive")}</dt><dd class="amount">${escapeHtml(
    formatDecimal(lang, amount, claim.decimals),
  )} ${escapeHtml(claim.currency)}</dd></div><div><dt>${t("claimNetwork")}</dt><dd>${escapeHtml(claim.network)}</dd></div></dl>
${claimState(page, claim)}`;
}

function claimHtml(page: ClaimPage): string {
  const { lang, token, claim } = page;
  const href = (code: Language) => `/refund/${token}?lang=${code}`;
  const title = linkMessage(lang, "claimTitle");
  if (claim === null) {
    // No merchant to name: the language switch alone, and why there is nothing here.
    const reason =
      page.reason !== null && "claim" in page.reason ? page.reason.claim : linkMessage(lang, "claimNotFound");
    return shell(
      lang,
      title,
      `<header class="top"><span></span>${languageSwitcher(lang, href)}</header>
<main class="card"><h1>${escapeHtml(title)}</h1><p role="alert">${escapeHtml(reason)}</p></main>`,
    );
  }
  return framedPage({
    lang,
    title,
    merchant: claim.merchant,
    href,
    card: claimCard(page, claim),
    sandbox: page.sandbox,
  });
}

function sendPage(reply: FastifyReply, status: number, page: ClaimPage) {
  return reply.code(status).headers(PAY_HEADERS).type("text/html; charset=utf-8").send(claimHtml(page));
}

function pageStatus(claim: ClaimView | null): number {
  if (claim === null) return 404;
  return claim.status === "expired" ? 410 : 200;
}

/** A refusal or a problem as the page's words: about the address, or about the claim (plain text). */
function reasonOf(lang: Language, problem: Problem, address: string): Reason {
  switch (problem.code) {
    case "invalid_address":
      // The refusal's own sentence says which rule (English: the API's words), after the page's.
      return { field: `${linkMessage(lang, "claimInvalidAddress")} ${problem.detail}`, address };
    case "destination_screened":
      return { field: linkMessage(lang, "claimScreened"), address };
    case "validation_failed":
      // The form's one field is missing or empty (a browser without `required`).
      return { field: linkMessage(lang, "claimAddressRequired"), address };
    case "refund_claim_not_found":
      return { claim: linkMessage(lang, "claimNotFound") };
    case "refund_claim_expired":
    case "refund_claim_closed":
      return null; // The claim's own state says it.
  }
  if (problem.status === 429 || problem.status >= 500) return { claim: linkMessage(lang, "claimTryLater") };
  return { claim: linkMessage(lang, "claimProblem", { detail: problem.detail }) };
}

/** A refusal or an error answered as the page when a browser asks: the claim as it stands, and why. */
async function sendRefusalPage(ctx: ServiceContext, request: FastifyRequest, reply: FastifyReply, problem: Problem) {
  const { params, query, headers, body } = request as FastifyRequest<{
    Params: { token?: unknown };
    Querystring: { lang?: unknown };
    Body: { address?: unknown } | undefined;
  }>;
  const lang = chooseLanguage(query?.lang, headers["accept-language"]);
  const token = typeof params?.token === "string" && params.token.length <= TOKEN_MAX_LENGTH ? params.token : null;
  // A claim that cannot be read (the database away) is shown as no claim, with the reason.
  const claim = token === null ? null : await readClaim(ctx.store, token).catch(() => null);
  const address = typeof body?.address === "string" ? body.address.slice(0, 200) : "";
  noteAnsweredProblem(reply, problem);
  if (problem.retryAfterSeconds !== undefined) reply.header("retry-after", String(problem.retryAfterSeconds));
  const reason = token === null ? null : reasonOf(lang, problem, address);
  return sendPage(reply, token === null ? 404 : problem.status, {
    lang,
    token: token ?? "",
    claim,
    reason,
    sandbox: ctx.config.serviceMode === "sandbox",
  });
}

export function registerRefundClaimPage(app: App, ctx: ServiceContext): void {
  const sandbox = ctx.config.serviceMode === "sandbox";
  app.register(async (plugin) => {
    const scope = plugin as unknown as App;
    acceptForms(scope);
    // A browser gets a page whatever went wrong (a bad form, a limit, the database away); API clients a problem.
    scope.setErrorHandler((error: FastifyError, request, reply) => {
      const problem = loggedProblem(error, request);
      if (!asksForHtml(request.headers)) return sendProblem(reply, problem);
      return sendRefusalPage(ctx, request, reply, problem);
    });
    scope.get(
      "/refund/:token",
      { schema: { hide: true, params: TokenParams, querystring: LangQuery } },
      async (request, reply) => {
        const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
        const { token } = request.params;
        const claim = await readClaim(ctx.store, token);
        return sendPage(reply, pageStatus(claim), { lang, token, claim, reason: null, sandbox });
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
            200: Type.Union([
              Type.Object({ request: PublicRefundRequest }, { additionalProperties: false }),
              // A held deposit's refund (product §30): a refund request object always names an invoice.
              Type.Object({ refund: DepositRefund }, { additionalProperties: false }),
            ]),
            ...problems(400, 404, 409, 410, 429),
          },
        },
      },
      async (request, reply) => {
        const { token } = request.params;
        const claimed = await claimRefund(ctx, token, request.body.address, payoutRailPolicy(ctx));
        const page = asksForHtml(request.headers);
        if (claimed.ok && page) {
          const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
          return reply.headers(PAY_HEADERS).redirect(`/refund/${encodeURIComponent(token)}?lang=${lang}`, 303);
        }
        if (claimed.ok) return claimed.value;
        const problem = refusalProblem(claimed.refusal);
        if (page) return sendRefusalPage(ctx, request, reply, problem);
        throw problem;
      },
    );
  });
}
