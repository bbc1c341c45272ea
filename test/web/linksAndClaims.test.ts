// A payment link and a refund claim page in a real browser (product §25): the open-amount form makes one invoice and lands on its page; the claim form takes an address and shows the refund claimed.
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { adjust, completedInvoice, feeFreeMerchant, type RefundMerchant } from "../support/refunds.ts";
import { merchant } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";
import { launchChromium } from "./browser.ts";

let browser: Browser;
let m: RefundMerchant;

const server = useTestServer();
beforeAll(async () => {
  m = await feeFreeMerchant(server, { merchantName: "Northwind Coffee" });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function seriousViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

describe("payment links and refund claims in Chromium", () => {
  it("walks an open-amount payment link to its invoice's page, once per browser session", async () => {
    const link = await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", {
      currency: "USDT",
      minAmount: "5",
      maxAmount: "50",
      description: "Tip jar",
    });
    expect(link.status).toBe(200);
    const context = await browser.newContext({ locale: "en-US" });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    try {
      await page.goto(link.body.url);
      expect(await page.locator(".description").textContent()).toBe("Tip jar");
      expect(await seriousViolations(page)).toEqual([]);
      await page.fill("#amount", "70");
      await page.click("button[type=submit]");
      expect(await page.locator("#amount-error").textContent()).toContain("between 5 and 50 USDT");
      expect(await page.locator("#amount").getAttribute("aria-invalid")).toBe("true");
      await page.fill("#amount", "12.5");
      await Promise.all([page.waitForURL(/\/pay\/[0-9a-f-]{36}/), page.click("button[type=submit]")]);
      await expect.poll(() => page.locator("[data-amount]").textContent()).toBe("12.5 USDT");
      const invoiceUrl = page.url();
      // Back to the link in the same browser session: the same invoice.
      await page.goto(link.body.url);
      expect(page.url()).toBe(invoiceUrl);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("claims a refund on its page with the payer's address", async () => {
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "40" });
    await adjust(server, m.id, "USDT", "5");
    const created = await signedCall(server.baseUrl, {
      apiKey: m.apiKey,
      secret: m.secretKey,
      path: "/public/v1/refunds/create",
      body: { invoiceId: invoice.id, type: "crypto", amount: "15", claim: true },
    });
    expect(created.answer.status).toBe(200);
    const context = await browser.newContext({ locale: "de-DE" });
    const page = await context.newPage();
    try {
      await page.goto(created.answer.body.claimUrl);
      expect(await page.locator("h1").textContent()).toBe("Northwind Coffee erstattet Ihnen");
      expect(await page.locator(".amount").textContent()).toBe("14 USDT");
      expect(await seriousViolations(page)).toEqual([]);
      await page.fill("#address", "not an address");
      await page.click("button[type=submit]");
      expect(await page.locator("#address-error").textContent()).toContain("ungültig");
      await page.fill("#address", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
      await page.click("button[type=submit]");
      await expect.poll(() => page.locator("[data-status]").getAttribute("data-status")).toBe("claimed");
      expect(await page.locator("[data-status]").textContent()).toContain("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
      expect(await page.locator("form").count()).toBe(0);
    } finally {
      await context.close();
    }
  });
});
