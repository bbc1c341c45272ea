// The frame every payer's page shares (invoice, payment link, refund claim): the document shell, the merchant's header with the language switch, labelled inputs with inline errors.
import { LANGUAGES, type Language, message } from "./messages.ts";

/** Everything interpolated into the page passes through here: merchant text and URLs are untrusted. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

/**
 * A logo the page may show without a request to another origin: a path on this service or an inline
 * `data:image/` URI (PNG, JPEG, GIF, WebP; not SVG, which could carry script when opened directly).
 * Any other logo is left out and the merchant's name stands alone.
 */
export function showableLogo(logo: string | null): string | null {
  if (logo === null) return null;
  if (/^\/(?!\/)[\w\-./]*$/.test(logo)) return logo;
  if (/^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+$/.test(logo)) return logo;
  return null;
}

export const ASSETS = "/pay/assets";

/** The document around a page's body: no inline script or style, the payer's stylesheet, a mobile viewport. */
export function shell(lang: Language, title: string, body: string, bodyAttributes = ""): string {
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${ASSETS}/pay.css">
</head>
<body${bodyAttributes}>
${body}
</body>
</html>
`;
}

/** The four languages as plain links; `href` gives the same page in a language (a path with `?lang=`, unescaped). */
export function languageSwitcher(lang: Language, href: (code: Language) => string): string {
  const links = LANGUAGES.map((code) => {
    const name = escapeHtml(message(code, "languageName"));
    const target = escapeHtml(href(code));
    return code === lang
      ? `<li><a aria-current="true" lang="${code}" href="${target}">${name}</a></li>`
      : `<li><a lang="${code}" hreflang="${code}" href="${target}">${name}</a></li>`;
  }).join("");
  return `<nav class="langs" aria-label="${escapeHtml(message(lang, "language"))}"><ul>${links}</ul></nav>`;
}

/** Whose page it is, as the merchant configured it; a missing name reads "the merchant" in the page's language. */
export interface PageMerchant {
  name: string | null;
  logo: string | null;
  /** The merchant asked for no "Payments by this service" footer. */
  whitelabeling: boolean;
}

export function merchantName(lang: Language, merchant: PageMerchant): string {
  return merchant.name ?? message(lang, "theMerchant");
}

/** The top of the page: the merchant's logo (when showable) and name, and the language switch. */
export function merchantHeader(lang: Language, merchant: PageMerchant, href: (code: Language) => string): string {
  const logo = showableLogo(merchant.logo);
  return `<header class="top">
<div class="merchant">${logo === null ? "" : `<img class="logo" src="${escapeHtml(logo)}" alt="" width="40" height="40">`}<span class="name">${escapeHtml(
    merchantName(lang, merchant),
  )}</span></div>
${languageSwitcher(lang, href)}
</header>`;
}

export function pageFooter(lang: Language, merchant: PageMerchant): string {
  return merchant.whitelabeling ? "" : `<footer><p>${escapeHtml(message(lang, "poweredBy"))}</p></footer>`;
}

export interface FramedPage {
  lang: Language;
  title: string;
  merchant: PageMerchant;
  /** The same page in another language (unescaped). */
  href: (code: Language) => string;
  /** The inside of the `<main class="card">`. */
  card: string;
  sandbox?: boolean;
  /** What follows the card before the footer (the invoice page's script). */
  after?: string;
  bodyAttributes?: string;
}

/** A whole payer's page: the sandbox banner, the merchant's header, one card, the footer. */
export function framedPage(page: FramedPage): string {
  const { lang } = page;
  const banner = page.sandbox === true ? `<p class="sandbox-banner">${escapeHtml(message(lang, "sandbox"))}</p>\n` : "";
  return shell(
    lang,
    page.title,
    `${banner}${merchantHeader(lang, page.merchant, page.href)}
<main class="card">
${page.card}
</main>
${pageFooter(lang, page.merchant)}${page.after ?? ""}`,
    page.bodyAttributes,
  );
}

export interface TextField {
  /** The input's `id` and `name`. */
  name: string;
  /** Plain text (escaped here). */
  label: string;
  /** Plain text below the input, read with it by assistive technology. */
  hint?: string;
  /** Plain text: the input is marked invalid and the error is read with it. */
  error?: string | null;
  value?: string;
  /** Extra attributes, already escaped (`required inputmode="decimal"`). */
  attributes?: string;
}

/** A labelled input with its hint and its inline error, linked by `aria-describedby`. */
export function textField(field: TextField): string {
  const { name } = field;
  const id = escapeHtml(name);
  const described: string[] = [];
  const below: string[] = [];
  if (field.error !== undefined && field.error !== null) {
    described.push(`${id}-error`);
    below.push(`<p class="field-error" id="${id}-error">${escapeHtml(field.error)}</p>`);
  }
  if (field.hint !== undefined) {
    described.push(`${id}-hint`);
    below.push(`<p class="hint" id="${id}-hint">${escapeHtml(field.hint)}</p>`);
  }
  const invalid = field.error !== undefined && field.error !== null ? ` aria-invalid="true"` : "";
  const describedBy = described.length > 0 ? ` aria-describedby="${described.join(" ")}"` : "";
  const value = field.value === undefined ? "" : ` value="${escapeHtml(field.value)}"`;
  return `<div class="field${invalid === "" ? "" : " field-invalid"}"><label for="${id}">${escapeHtml(field.label)}</label><input id="${id}" name="${id}"${value}${invalid}${describedBy}${
    field.attributes === undefined ? "" : ` ${field.attributes}`
  }>${below.join("")}</div>`;
}
