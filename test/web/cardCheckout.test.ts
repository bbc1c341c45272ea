// "Pay by card" in a real browser (product §20): the live payer's page of a fiat invoice leads, through its form, to the provider's checkout (a local Stripe double).
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInvoice } from "../support/invoices.ts";
import { createMerchant, startTestServer, type TestServer } from "../support/server.ts";
import { type StripeDouble, startStripeDouble, stripeEnv } from "../support/stripeDouble.ts";
import { launchChromium } from "./browser.ts";

let double: StripeDouble;
let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  double = await startStripeDouble();
  server = await startTestServer({ env: stripeEnv(double) });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await double?.close();
});

describe("Pay by card in Chromium", () => {
  for (const javaScript of [true, false]) {
    it(`follows the button to the provider's checkout, ${javaScript ? "with" : "without"} the page script`, async () => {
      const m = await createMerchant(server);
      const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount: "19.99" });
      const context = await browser.newContext({ javaScriptEnabled: javaScript });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      page.on("response", (r) => {
        if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`);
      });
      page.on("console", (msg) => {
        if (msg.type() === "error") errors.push(msg.text());
      });
      try {
        await page.goto(invoice.invoice_url);
        const button = page.getByRole("button", { name: "Pay by card" });
        await expect.poll(() => button.count()).toBe(1);
        await Promise.all([page.waitForURL(`${double.baseUrl}/c/pay/**`), button.click()]);
        const session = double.sessions.find((s) => s.invoiceId === invoice.id);
        expect(session).toBeDefined();
        expect(page.url()).toBe(session?.url);
        expect(await page.locator("#checkout").textContent()).toBe("1999 eur");
        expect(errors).toEqual([]);
      } finally {
        await context.close();
      }
    });
  }
});
