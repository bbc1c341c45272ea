// The payer's page in a real browser: renders, updates live, copies, counts down, switches language, passes axe; screenshots.
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { createMerchant } from "../support/server.ts";
import { launchChromium } from "./browser.ts";

let browser: Browser;
let m: { id: string; apiKey: string };
const thirdParty: string[] = [];

const server = useTestServer();
beforeAll(async () => {
  m = await createMerchant(server, { merchantName: "Northwind Coffee" });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function open(url: string, options: { width?: number; height?: number; locale?: string } = {}) {
  const context: BrowserContext = await browser.newContext({
    viewport: { width: options.width ?? 390, height: options.height ?? 844 },
    locale: options.locale ?? "en-US",
    permissions: ["clipboard-read", "clipboard-write"],
  });
  const page: Page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(msg.text());
  });
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("request", (request) => {
    if (!request.url().startsWith(server.baseUrl) && !request.url().startsWith("data:")) thirdParty.push(request.url());
  });
  await page.goto(url);
  return { context, page, errors };
}

async function seriousViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

describe("payer's page in Chromium", () => {
  it("renders the QR code, address, amount and network, with no error and no third-party request", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "49.9" });
    const { context, page, errors } = await open(invoice.invoice_url);
    try {
      await expect
        .poll(() => page.locator("img.qr").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth))
        .toBeGreaterThan(0);
      expect(await page.locator("[data-amount]").textContent()).toBe("49.9 USDT");
      expect(await page.locator("[data-address]").textContent()).toMatch(/^0x[0-9a-f]{40}$/);
      expect(await page.locator(".warning").textContent()).toContain("Send only USDT on the ethereum network");
      expect(await page.locator(".sandbox-banner").isVisible()).toBe(true);
      // The script runs, so the page says it updates by itself.
      await expect.poll(() => page.locator("[data-live-hint]").isVisible()).toBe(true);
      expect(await page.locator("[data-reload-hint]").isVisible()).toBe(false);
      // Usable at 360 px: nothing wider than the viewport.
      await page.setViewportSize({ width: 360, height: 740 });
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(360);
      expect(errors).toEqual([]);
      expect(thirdParty).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("turns completed within 5 s of a sandbox payment, without a reload", async () => {
    const invoice = await createInvoice(server, m.apiKey, {
      currency: "ETH",
      amount: "0.25",
      success_url: "https://shop.example/thanks",
    });
    const { context, page, errors } = await open(invoice.invoice_url);
    try {
      await page.evaluate("window.marker = 42");
      // Wait until the stream delivered its first event, so the payment is a change it must see.
      await page.waitForTimeout(300);
      await pay(server, m.apiKey, invoice.id, {});
      await page.locator('[data-status="completed"]').waitFor({ timeout: 30_000 });
      expect(await page.evaluate("window.marker")).toBe(42);
      expect(await page.locator(".merchant-link a").getAttribute("href")).toBe("https://shop.example/thanks");
      expect(await page.locator(".payment .confirmations").textContent()).toBe("12 of 12 confirmations");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("falls back to polling /status when the event stream is refused", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "3" });
    const { context, page } = await open("about:blank");
    try {
      await page.route("**/events", (route) => route.fulfill({ status: 429, body: "" }));
      await page.goto(invoice.invoice_url);
      await page.waitForTimeout(300);
      await pay(server, m.apiKey, invoice.id, {});
      await page.locator('[data-status="completed"]').waitFor({ timeout: 30_000 });
    } finally {
      await context.close();
    }
  });

  it("copies the address and the amount to the clipboard", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "1234.56" });
    const { context, page } = await open(invoice.invoice_url);
    try {
      const address = await page.locator("[data-address]").textContent();
      await page.getByRole("button", { name: "Copy address" }).click();
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe(address);
      await page.getByRole("button", { name: "Copy amount" }).click();
      // The plain amount a wallet accepts, not the localized "1,234.56".
      expect(await page.evaluate("navigator.clipboard.readText()")).toBe("1234.56");
    } finally {
      await context.close();
    }
  });

  it("counts down to expires_at", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "5" });
    const { context, page } = await open(invoice.invoice_url);
    try {
      const countdown = page.locator("time[data-expires]");
      const first = await countdown.textContent();
      expect(first).toMatch(/^(\d+:)?\d{2}:\d{2}$/);
      await expect.poll(() => countdown.textContent(), { timeout: 30_000 }).not.toBe(first);
    } finally {
      await context.close();
    }
  });

  it("follows Accept-Language and switches language from the switcher", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "1234.5" });
    const { context, page } = await open(invoice.invoice_url, { locale: "fr-FR" });
    try {
      expect(await page.locator("html").getAttribute("lang")).toBe("fr");
      expect(await page.locator("[data-status]").textContent()).toBe("En attente de paiement");
      expect(await page.locator("[data-amount]").textContent()).toMatch(/^1\s234,5 USDT$/);
      await page.getByRole("link", { name: "Deutsch" }).click();
      await page.waitForURL(/lang=de/);
      expect(await page.locator("html").getAttribute("lang")).toBe("de");
      expect(await page.locator("[data-status]").textContent()).toBe("Wartet auf Zahlung");
      expect(await page.locator("[data-amount]").textContent()).toBe("1.234,5 USDT");
    } finally {
      await context.close();
    }
  });

  it("has no serious or critical axe violation, open or settled", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "8" });
    const { context, page } = await open(invoice.invoice_url);
    try {
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole("button", { name: "Underpay" }).click();
      await page.locator('[data-status="processing"]').waitFor({ timeout: 30_000 });
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole("button", { name: "Pay in full" }).click();
      await page.locator('[data-status="completed"]').waitFor({ timeout: 30_000 });
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("simulates an AML flag from its sandbox button, then a block", async () => {
    const invoice = await createInvoice(server, m.apiKey, {
      currency: "USDT",
      amount: "8",
      fail_url: "https://shop.example/failed",
    });
    const { context, page } = await open(invoice.invoice_url);
    try {
      await page.getByRole("button", { name: "Pay with an AML flag" }).click();
      await page.locator('[data-status="aml_check"]').waitFor({ timeout: 30_000 });
      expect(await page.locator(".payment .state").textContent()).toBe("Under review");
      await page.getByRole("button", { name: "Screening: block" }).click();
      await page.locator('[data-status="aml_block"]').waitFor({ timeout: 30_000 });
      expect(await page.locator(".merchant-link a").getAttribute("href")).toBe("https://shop.example/failed");
    } finally {
      await context.close();
    }
  });

  it("asks for the rest after a partial payment, live", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "49.9" });
    const { context, page, errors } = await open(invoice.invoice_url);
    try {
      await page.waitForTimeout(300);
      await pay(server, m.apiKey, invoice.id, { amount: "20" });
      await page.locator("[data-partial]").waitFor({ timeout: 5000 });
      expect(await page.locator("[data-status]").textContent()).toBe(
        "Partly paid: 20 USDT of 49.9 USDT received. Please pay the remaining 29.9 USDT.",
      );
      expect(await page.locator("[data-amount]").textContent()).toBe("29.9 USDT");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("works its sandbox buttons without JavaScript: the form posts, the page comes back", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "49.9" });
    const context = await browser.newContext({
      viewport: { width: 390, height: 844 },
      locale: "de-DE",
      javaScriptEnabled: false,
    });
    const page = await context.newPage();
    const answers: number[] = [];
    page.on("response", (response) => {
      if (response.url().includes("/sandbox/")) answers.push(response.status());
    });
    try {
      await page.goto(invoice.invoice_url);
      await page.getByRole("button", { name: "Zu wenig zahlen" }).click();
      await page.locator("[data-partial]").waitFor({ timeout: 10_000 });
      expect(page.url()).toBe(`${invoice.invoice_url}?lang=de`);
      // Without the script the page does not claim to update itself; it says to reload.
      expect(await page.getByText("Laden Sie diese Seite neu, um neue Zahlungen zu sehen.").isVisible()).toBe(true);
      expect(await page.locator("[data-live-hint]").isVisible()).toBe(false);
      expect(await page.locator("[data-status]").textContent()).toBe(
        "Teilweise bezahlt: 24,95 USDT von 49,9 USDT erhalten. Bitte zahlen Sie die restlichen 24,95 USDT.",
      );
      await page.getByRole("button", { name: "Vollständig zahlen" }).click();
      await page.locator('[data-status="completed"]').waitFor({ timeout: 10_000 });
      expect(answers).toEqual([303, 303]);
    } finally {
      await context.close();
    }
  });

  it("shows a plain 404 page for an unknown id", async () => {
    const { context, page } = await open(`${server.baseUrl}/pay/00000000-0000-4000-8000-000000000000`);
    try {
      expect(await page.locator("h1").textContent()).toBe("Invoice not found");
    } finally {
      await context.close();
    }
  });
});
