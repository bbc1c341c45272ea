// The refund claim page in Chromium (product §25, issue 42 item 8): the payer's page's design, four languages, inline errors, a phone layout, axe-clean; UPDATE_SCREENSHOTS=1 writes docs/screenshots/claim/.
import { mkdir, writeFile } from "node:fs/promises";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { adjust, completedInvoice, feeFreeMerchant, type RefundMerchant } from "../support/refunds.ts";
import { signedCall } from "../support/signing.ts";
import { launchChromium } from "./browser.ts";

const OUT = new URL("../../docs/screenshots/claim/", import.meta.url);
const UPDATE = process.env.UPDATE_SCREENSHOTS === "1";
const SIZES = [
  { name: "390x844", width: 390, height: 844 },
  { name: "1280x900", width: 1280, height: 900 },
] as const;
// A 40×40 PNG: the merchant's logo, shown from the page itself (no other origin). The merchant API takes http(s)
// logos only, which the payer's pages leave out (showableLogo), so the test stores an inline one directly.
const LOGO =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACgAAAAoCAIAAAADnC86AAAAMElEQVR42u3NMQ0AAAgDsLnCBVbw/2GChKdJ/2a6XkQsFovFYrFYLBaLxWKxWCy+s8HU9UwQpbWlAAAAAElFTkSuQmCC";

let browser: Browser;
let m: RefundMerchant;

const server = useTestServer();
beforeAll(async () => {
  m = await feeFreeMerchant(server, { merchantName: "Northwind Coffee" });
  await server.ctx.store.transaction((tx) =>
    tx.db.updateTable("merchants").set({ logo: LOGO }).where("id", "=", m.id).execute(),
  );
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function claimUrl(): Promise<string> {
  const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "40" });
  await adjust(server, m.id, "USDT", "5");
  const created = await signedCall(server.baseUrl, {
    apiKey: m.apiKey,
    secret: m.secretKey,
    path: "/public/v1/refunds/create",
    body: { invoiceId: invoice.id, type: "crypto", amount: "15", claim: true },
  });
  expect(created.answer.status).toBe(200);
  return created.answer.body.claimUrl;
}

async function seriousViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** The page fits the viewport's width (nothing to scroll sideways on a phone), is axe-clean, and is pictured. */
async function checkAndPicture(page: Page, name: string, size: (typeof SIZES)[number]) {
  const overflow = await page.evaluate(() => {
    const doc = (globalThis as any).document;
    const wide = [...doc.querySelectorAll("*")].filter(
      (e: any) => e.getBoundingClientRect().right > doc.documentElement.clientWidth + 1,
    );
    return {
      width: doc.documentElement.scrollWidth,
      wide: wide.map((e: any) => `${e.tagName}.${e.className}#${e.id}`),
    };
  });
  expect(overflow.wide).toEqual([]);
  expect(overflow.width).toBeLessThanOrEqual(size.width);
  expect(await seriousViolations(page)).toEqual([]);
  const png = await page.screenshot({ fullPage: true });
  if (UPDATE) await writeFile(new URL(`${name}-${size.name}.png`, OUT), png);
}

describe("the refund claim page in Chromium", () => {
  it("shows the merchant, switches language, says why an address is refused beside it, at phone and desktop sizes", async () => {
    if (UPDATE) await mkdir(OUT, { recursive: true });
    for (const size of SIZES) {
      const url = await claimUrl();
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
        locale: "en-US",
      });
      const page = await context.newPage();
      try {
        await page.goto(url);
        expect(await page.locator(".top .name").textContent()).toBe("Northwind Coffee");
        expect(await page.locator(".top img.logo").count()).toBe(1);
        expect(await page.locator("label[for=address]").textContent()).toBe(
          "Your USDT address on the ethereum network",
        );
        expect(await page.locator("#address-hint").textContent()).toContain("an address you control");
        await checkAndPicture(page, "open", size);

        await page.fill("#address", "0x0000000000000000000000000000000000000000");
        await Promise.all([page.waitForLoadState("load"), page.click("button[type=submit]")]);
        expect(await page.locator("#address").getAttribute("aria-invalid")).toBe("true");
        expect(await page.locator("#address-error").textContent()).toContain("zero address");
        expect(await page.locator("#address").inputValue()).toBe("0x0000000000000000000000000000000000000000");
        await checkAndPicture(page, "refused", size);

        await page.click(".langs a[lang=fr]");
        expect(await page.locator("h1").textContent()).toBe("Northwind Coffee vous rembourse");
        await page.fill("#address", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
        await page.click("button[type=submit]");
        await expect.poll(() => page.locator("[data-status]").getAttribute("data-status")).toBe("claimed");
        expect(await page.locator("html").getAttribute("lang")).toBe("fr");
        await checkAndPicture(page, "claimed", size);
      } finally {
        await context.close();
      }
    }
  });
});
