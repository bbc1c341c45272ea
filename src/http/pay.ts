// The payer's hosted page behind `invoice_url`: a plain server-rendered HTML summary of what to pay and where.
import { Type } from "typebox";
import { formatAmount } from "../domain/money.ts";
import { amountDue, summarizePayments } from "../domain/settlement.ts";
import { findInvoiceById, type LoadedInvoice } from "../store/invoices.ts";
import { findMerchant } from "../store/merchants.ts";
import type { App } from "./app.ts";
import type { ServiceContext } from "./context.ts";

/** Everything interpolated into the page passes through here: merchant text and URLs are untrusted. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

const STATUS_TEXT: Record<string, string> = {
  pending: "Awaiting payment",
  processing: "Payment seen, awaiting confirmation",
  completed: "Paid",
  refund_processing: "Paid (refund in progress)",
  refunded: "Refunded",
  failed: "Expired before it was paid in full",
  expired: "Expired",
  aml_check: "Payment under review",
  aml_block: "Payment blocked by review",
};

/** Pages are static text: no scripts, no external resources, not framed, not cached. */
const HEADERS = {
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

const STYLE =
  "body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#222}" +
  "dt{font-weight:600;margin-top:.75rem}dd{margin:0}code{word-break:break-all;font-size:1.05em}" +
  ".note{color:#555;font-size:.9em;margin-top:1.5rem}";

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

function row(term: string, value: string): string {
  return `<dt>${escapeHtml(term)}</dt><dd>${value}</dd>`;
}

function link(href: string, text: string): string {
  // Only http(s) URLs are accepted at creation, so href cannot carry a script scheme.
  return `<p><a href="${escapeHtml(href)}" rel="noopener noreferrer">${escapeHtml(text)}</a></p>`;
}

export function renderInvoicePage(
  loaded: LoadedInvoice,
  merchantName: string | null,
  sandbox: boolean,
  sandboxPrefix: string,
): string {
  const { invoice: i, decimals, payments } = loaded;
  const money = (minor: bigint) => `${formatAmount(minor, decimals)} ${i.currency}`;
  const due = amountDue(i.finalAmountMinor, payments);
  const open = i.status === "pending" || i.status === "processing" || i.status === "aml_check";
  const rows = [
    row("Status", escapeHtml(STATUS_TEXT[i.status] ?? i.status)),
    row("Amount", escapeHtml(money(i.finalAmountMinor))),
    row("Paid so far", escapeHtml(money(summarizePayments(payments).paidMinor))),
  ];
  if (open) rows.push(row("Still due", escapeHtml(money(due))));
  if (i.expiresAt !== null) {
    rows.push(row("Pay before", `<time datetime="${escapeHtml(i.expiresAt)}">${escapeHtml(i.expiresAt)}</time>`));
  }
  if (i.depositAddress !== null) {
    rows.push(row(`Send ${i.currency} to this address`, `<code>${escapeHtml(i.depositAddress)}</code>`));
  } else {
    rows.push(row("Payment method", "Card"));
  }
  if (i.orderNo !== null) rows.push(row("Order", escapeHtml(i.orderNo)));
  if (i.description !== null && i.description !== "") rows.push(row("Description", escapeHtml(i.description)));

  const links: string[] = [];
  if (i.status === "completed" && i.successUrl !== null) links.push(link(i.successUrl, "Continue to the merchant"));
  if ((i.status === "failed" || i.status === "expired") && i.failUrl !== null) {
    links.push(link(i.failUrl, "Back to the merchant"));
  }
  if (i.returnUrl !== null) links.push(link(i.returnUrl, "Return to the merchant"));

  const note = sandbox
    ? `<p class="note">Sandbox: no real money moves. Simulate the payer with POST ${escapeHtml(
        `${sandboxPrefix}/invoices/${i.id}/payments`,
      )}.</p>`
    : "";
  const payee = merchantName === null ? "Payment" : `Payment to ${merchantName}`;
  return page(
    `${payee}: ${money(i.finalAmountMinor)}`,
    `<h1>${escapeHtml(payee)}</h1>
<p>Invoice <code>${escapeHtml(i.id)}</code></p>
<dl>${rows.join("")}</dl>
${links.join("\n")}
${note}`,
  );
}

export function registerPayPage(app: App, ctx: ServiceContext, sandboxPrefix: string): void {
  app.get(
    "/pay/:id",
    { schema: { hide: true, params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) }) } },
    async (request, reply) => {
      reply.headers(HEADERS).type("text/html; charset=utf-8");
      const loaded = await findInvoiceById(ctx.store, request.params.id);
      if (!loaded) {
        return reply
          .code(404)
          .send(page("Invoice not found", "<h1>Invoice not found</h1><p>Check the link you were given.</p>"));
      }
      const merchant = await findMerchant(ctx.store, loaded.invoice.merchantId);
      return reply.send(
        renderInvoicePage(loaded, merchant?.merchantName ?? null, ctx.config.serviceMode === "sandbox", sandboxPrefix),
      );
    },
  );
}
