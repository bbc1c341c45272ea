// The payer's hosted page behind invoice_url (product §13): the page, its status API, live events, QR code, assets and sandbox buttons.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import QRCode from "qrcode";
import { Type } from "typebox";
import type { ServiceContext } from "../app/context.ts";
import { currentRails } from "../app/rails.ts";
import { sandboxDecideAml, sandboxPay } from "../app/sandboxPayments.ts";
import { formatAmount, parseAmount } from "../domain/money.ts";
import { assert } from "../domain/result.ts";
import { amountDue } from "../domain/settlement.ts";
import { findInvoiceById } from "../store/invoices.ts";
import { FINAL_PAY_STATUSES, onNetwork, payStatus } from "../store/payStatus.ts";
import { registerPayByWallet } from "./pay/authorization.ts";
import { cardCheckoutOffered, payPageFormAction, registerPayByCard } from "./pay/card.ts";
import { registerPayEvents } from "./pay/events.ts";
import { chooseLanguage, type Language } from "./pay/messages.ts";
import { renderNotFound, renderPayPage } from "./pay/render.ts";
import { statusBody } from "./pay/statusBody.ts";
import { Problem, valueOrProblem } from "./problem.ts";
import type { App } from "./routeHost.ts";
import { LangQuery } from "./shapes.ts";

export { escapeHtml } from "./pay/render.ts";

/** Scripts and styles from this service only, nothing inline, nothing from elsewhere, never framed. */
export const PAY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) });
/** The pay page's query: the language and the network the payer chose. */
const PayPageQuery = Type.Object({
  lang: Type.Optional(Type.String({ maxLength: 20 })),
  /** The network the payer chose among the invoice's (product §23); a plain link, so no script is needed. */
  network: Type.Optional(Type.String({ maxLength: 40 })),
});

function qrVersion(uri: string | null): string | null {
  return uri === null ? null : createHash("sha256").update(uri).digest("hex").slice(0, 16);
}

/** Built by `npm run build:web` (prestart, and the browser tests' global setup). */
const ASSET_DIR = new URL("../../dist/web/pay/", import.meta.url);
const ASSET_TYPES: Readonly<Record<string, string>> = {
  "pay.js": "text/javascript; charset=utf-8",
  "pay.css": "text/css; charset=utf-8",
};
const assetCache = new Map<string, Buffer>();

const SANDBOX_ACTIONS = ["pay", "unconfirmed", "underpay", "aml", "confirm", "clear", "block"] as const;
type SandboxAction = (typeof SANDBOX_ACTIONS)[number];

/** One sandbox button: the same rules as POST /sandbox/v1/invoices/{id}/payments and /aml, on this invoice's merchant. */
async function runSandboxAction(ctx: ServiceContext, invoiceId: string, action: SandboxAction): Promise<void> {
  const loaded = await findInvoiceById(ctx.store, invoiceId);
  if (!loaded) throw new Problem("invoice_not_found", "No invoice with this id.");
  const { invoice, decimals, payments } = loaded;
  const merchantId = invoice.merchantId;
  switch (action) {
    case "pay":
      valueOrProblem(await sandboxPay(ctx, merchantId, invoiceId, {}));
      return;
    case "unconfirmed":
      valueOrProblem(await sandboxPay(ctx, merchantId, invoiceId, { confirmed: false }));
      return;
    case "aml":
      valueOrProblem(await sandboxPay(ctx, merchantId, invoiceId, { amlFlag: true }));
      return;
    case "underpay": {
      // Half of what is due (at least the smallest unit): enough to show a partly paid invoice.
      const due = amountDue(invoice.finalAmountMinor, payments);
      const half = due / 2n > 0n ? due / 2n : 1n;
      const amount = formatAmount(half, decimals);
      assert(parseAmount(amount, decimals).ok, "half of the due amount parses");
      valueOrProblem(await sandboxPay(ctx, merchantId, invoiceId, { amount }));
      return;
    }
    case "confirm":
      // Bounded by the invoice's payments, which the sandbox creates one per button press.
      for (const p of payments.filter((q) => !q.confirmed)) {
        valueOrProblem(await sandboxPay(ctx, merchantId, invoiceId, { txId: p.txId, confirmed: true }));
      }
      return;
    case "clear":
    case "block":
      valueOrProblem(await sandboxDecideAml(ctx, merchantId, invoiceId, action));
      return;
  }
}

export function registerPayPage(app: App, ctx: ServiceContext, _sandboxPrefix: string): void {
  const sandbox = ctx.config.serviceMode === "sandbox";

  registerPayPageViews(app, ctx, sandbox);
  registerPayPageFiles(app, ctx);

  registerPayEvents(app, ctx);
  registerPayByCard(app, ctx);
  registerPayByWallet(app, ctx);

  // Page-scoped sandbox buttons; in live mode the routes do not exist (404 from the not-found handler).
  if (sandbox) registerSandboxButtons(app, ctx);
}

/** The page and its status. */
function registerPayPageViews(app: App, ctx: ServiceContext, sandbox: boolean): void {
  app.get(
    "/pay/:id",
    { schema: { hide: true, params: IdParams, querystring: PayPageQuery } },
    async (request, reply) => {
      reply.headers(PAY_HEADERS).type("text/html; charset=utf-8");
      const formAction = payPageFormAction(ctx);
      if (formAction !== null) {
        reply.header(
          "content-security-policy",
          PAY_HEADERS["content-security-policy"].replace("form-action 'self'", formAction),
        );
      }
      const lang = chooseLanguage(request.query.lang, request.headers["accept-language"]);
      reply.header("content-language", lang).header("vary", "accept-language");
      const found = await payStatus(ctx.store, request.params.id, await currentRails(ctx));
      if (!found) return reply.code(404).send(renderNotFound(lang));
      const status = onNetwork(found, request.query.network);
      return reply.send(
        renderPayPage(status, {
          lang,
          sandbox,
          qrVersion: qrVersion(status.paymentUri),
          cardCheckout: cardCheckoutOffered(ctx),
        }),
      );
    },
  );

  app.get("/pay/:id/status", { schema: { hide: true, params: IdParams } }, async (request, reply) => {
    reply.headers(PAY_HEADERS);
    const status = await payStatus(ctx.store, request.params.id, await currentRails(ctx));
    if (!status) throw new Problem("invoice_not_found", "No invoice with this id.");
    return statusBody(status, ctx.wallet?.hotAddress ?? null);
  });
}

/** The page's QR code and its assets. */
function registerPayPageFiles(app: App, ctx: ServiceContext): void {
  app.get(
    "/pay/:id/qr.svg",
    {
      schema: {
        hide: true,
        params: IdParams,
        querystring: Type.Object({
          v: Type.Optional(Type.String({ maxLength: 64 })),
          network: Type.Optional(Type.String({ maxLength: 40 })),
        }),
      },
    },
    async (request, reply) => {
      const found = await payStatus(ctx.store, request.params.id, await currentRails(ctx));
      const status = found === null ? null : onNetwork(found, request.query.network);
      if (!status || status.paymentUri === null || FINAL_PAY_STATUSES.has(status.status)) {
        throw new Problem("invoice_not_found", "No payment request to draw for this id.");
      }
      const svg = await QRCode.toString(status.paymentUri, { type: "svg", margin: 2, errorCorrectionLevel: "M" });
      // A versioned URL names one payment URI for good: the browser may keep it; any other URL is not cached.
      const current = request.query.v === qrVersion(status.paymentUri);
      return reply
        .headers({ ...PAY_HEADERS, "cache-control": current ? "public, max-age=31536000, immutable" : "no-store" })
        .type("image/svg+xml")
        .send(svg);
    },
  );

  app.get(
    "/pay/assets/:file",
    { schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 20 }) }) } },
    async (request, reply) => {
      const type = ASSET_TYPES[request.params.file];
      if (type === undefined) throw new Problem("not_found", "No such asset.");
      let body = assetCache.get(request.params.file);
      if (body === undefined) {
        body = await readFile(new URL(request.params.file, ASSET_DIR)).catch(() => undefined);
        if (body === undefined)
          throw new Error(`payer's page asset ${request.params.file} is not built: npm run build:web`);
        assetCache.set(request.params.file, body);
      }
      return reply
        .headers({ ...PAY_HEADERS, "cache-control": "public, max-age=3600" })
        .type(type)
        .send(body);
    },
  );
}

/**
 * A browser refuses to tell where a form post comes from only when it is old: `Sec-Fetch-Site`
 * (every current browser) must say same-origin, and an `Origin` other than `null` (which the
 * page's no-referrer policy makes the browser send) must be this service's. A request without
 * either (a script, curl) is allowed: the invoice id is the capability, as for the sandbox API.
 */
export function crossSiteFormPost(
  headers: Record<string, string | string[] | undefined>,
  ownOrigins: readonly string[],
): boolean {
  const site = headers["sec-fetch-site"];
  if (typeof site === "string" && site !== "same-origin" && site !== "none") return true;
  const origin = headers.origin;
  return typeof origin === "string" && origin !== "null" && !ownOrigins.includes(origin);
}

/**
 * POST /pay/{id}/sandbox/{action}: the page script posts with fetch (no body); without the script
 * the form posts `application/x-www-form-urlencoded` (its fields, none, are ignored) and follows the
 * 303 back to the page. Only this route, in its own scope, takes form bodies; everything else stays JSON.
 */
function registerSandboxButtons(app: App, ctx: ServiceContext): void {
  const ownOrigin = new URL(ctx.config.publicBaseUrl).origin;
  void app.register(async (plugin) => {
    const scope = plugin as unknown as App;
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, _body, done) =>
      done(null, undefined),
    );
    scope.post(
      "/pay/:id/sandbox/:action",
      {
        schema: {
          hide: true,
          params: Type.Object({
            id: IdParams.properties.id,
            action: Type.Union(SANDBOX_ACTIONS.map((a) => Type.Literal(a))),
          }),
          querystring: LangQuery,
        },
      },
      async (request, reply) => {
        const host = request.headers.host;
        const origins = typeof host === "string" ? [ownOrigin, `${request.protocol}://${host}`] : [ownOrigin];
        if (crossSiteFormPost(request.headers, origins)) {
          throw new Problem("cross_site_request", "Sandbox buttons work only from the invoice's own page.");
        }
        await runSandboxAction(ctx, request.params.id, request.params.action);
        const lang: Language = chooseLanguage(request.query.lang, request.headers["accept-language"]);
        // A form without the page script lands back on the page; the script posts with fetch and ignores this.
        return reply.headers(PAY_HEADERS).redirect(`/pay/${encodeURIComponent(request.params.id)}?lang=${lang}`, 303);
      },
    );
  });
}
