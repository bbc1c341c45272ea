// The payment link's page in Chromium (issue 42 item 8): the invoice page's design with the merchant's name and logo, a language switch, a labelled amount with its inline error, no horizontal scroll on a phone, axe-clean, Pay without JavaScript; UPDATE_SCREENSHOTS=1 writes docs/screenshots/links/.
import { mkdir, writeFile } from "node:fs/promises";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateMerchant } from "../../src/store/merchants.ts";
import { useTestServer } from "../support/fixture.ts";
import { createMerchant, merchant } from "../support/server.ts";
import { launchChromium } from "./browser.ts";

const OUT = new URL("../../docs/screenshots/links/", import.meta.url);
const SIZES = [
  { name: "390x844", width: 390, height: 844 },
  { name: "1280x900", width: 1280, height: 900 },
] as const;
/** A 1×1 PNG: an inline logo the page may show. */
const LOGO =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkqPtfDwAEPgG9fYqS2wAAAABJRU5ErkJggg==";

let browser: Browser;
let m: { id: string; apiKey: string };
const server = useTestServer();
beforeAll(async () => {
  m = await createMerchant(server, { merchantName: "Northwind Coffee" });
  // The operator API takes only http(s) logos, which the page leaves out (another origin): an inline one is set here.
  await server.ctx.store.transaction((tx) => updateMerchant(tx, m.id, { logo: LOGO }, new Date().toISOString()));
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function newLink(fields: Record<string, unknown>): Promise<string> {
  const link = await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", { currency: "USDT", ...fields });
  expect(link.status).toBe(200);
  return link.body.url;
}

async function axeViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** Checks the page as shown (axe, no horizontal scroll) and keeps its picture when asked. */
async function look(page: Page, name: string, width: number): Promise<void> {
  expect(await axeViolations(page)).toEqual([]);
  expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(width);
  const png = await page.screenshot({ fullPage: true });
  expect(png.byteLength).toBeGreaterThan(1000);
  if (process.env.UPDATE_SCREENSHOTS === "1") await writeFile(new URL(`${name}.png`, OUT), png);
}

describe("the payment link's page", () => {
  it("shows the price, the amount field with its error and the reasons, at phone and desktop sizes", async () => {
    if (process.env.UPDATE_SCREENSHOTS === "1") await mkdir(OUT, { recursive: true });
    const fixed = await newLink({ amount: "49.9", description: "2 × House blend, 1 kg" });
    const open = await newLink({ minAmount: "5", maxAmount: "50", description: "Tip jar" });
    const inactive = await newLink({ amount: "9", active: false });
    for (const size of SIZES) {
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
        locale: "en-US",
      });
      try {
        const page = await context.newPage();
        await page.goto(fixed);
        expect(await page.locator(".merchant .name").textContent()).toBe("Northwind Coffee");
        expect(await page.locator("img.logo").count()).toBe(1);
        expect(await page.locator("h1").textContent()).toBe("Pay Northwind Coffee");
        expect(await page.locator("[data-amount]").textContent()).toBe("49.9 USDT");
        await look(page, `fixed-${size.name}`, size.width);
        await page.goto(open);
        await page.getByLabel("Amount in USDT").fill("70");
        await page.getByRole("button", { name: "Continue to payment" }).click();
        await page.locator("#amount-error").waitFor();
        await look(page, `open-amount-error-${size.name}`, size.width);
        await page.getByRole("link", { name: "Deutsch" }).click();
        expect(await page.locator("h1").textContent()).toBe("An Northwind Coffee zahlen");
        await look(page, `open-amount-de-${size.name}`, size.width);
        await page.goto(inactive);
        expect(await page.locator("h1").textContent()).toBe("This payment link is no longer active.");
        await look(page, `inactive-${size.name}`, size.width);
      } finally {
        await context.close();
      }
    }
  });

  it("pays a fixed price without JavaScript", async () => {
    const fixed = await newLink({ amount: "12" });
    const context = await browser.newContext({ locale: "fr-FR", javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await page.goto(fixed);
      await Promise.all([
        page.waitForURL(/\/pay\/[0-9a-f-]{36}\?lang=fr$/),
        page.getByRole("button", { name: "Payer" }).click(),
      ]);
      await page.goto(fixed);
      expect(page.url()).toMatch(/\/pay\/[0-9a-f-]{36}\?lang=fr$/);
    } finally {
      await context.close();
    }
  });

  it("says try again later once this address has made its invoices for the minute", async () => {
    const fixed = await newLink({ amount: "7" });
    for (const size of SIZES) {
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
        locale: "en-US",
      });
      try {
        const page = await context.newPage();
        // Each press from a new browser session makes an invoice, until the address's limit (10 a minute).
        let status = 0;
        for (let i = 0; i < 15 && status !== 429; i++) {
          await context.clearCookies();
          await page.goto(fixed);
          const [answer] = await Promise.all([
            page.waitForResponse((r) => r.request().method() === "POST"),
            page.getByRole("button", { name: "Pay" }).click(),
          ]);
          status = answer.status();
          await page.waitForLoadState();
        }
        expect(status).toBe(429);
        expect(await page.locator("h1").textContent()).toBe("Too many payments are being started right now.");
        await look(page, `busy-${size.name}`, size.width);
      } finally {
        await context.close();
      }
    }
  });
});
