// Every state of the payer's page rendered in Chromium at phone and desktop sizes; UPDATE_SCREENSHOTS=1 writes them to docs/screenshots/pay/.
import { mkdir, writeFile } from "node:fs/promises";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { createMerchant } from "../support/server.ts";
import { launchChromium } from "./browser.ts";

const OUT = new URL("../../docs/screenshots/pay/", import.meta.url);
const SIZES = [
  { name: "390x844", width: 390, height: 844 },
  { name: "1280x900", width: 1280, height: 900 },
] as const;

let browser: Browser;
let m: { id: string; apiKey: string };

const server = useTestServer();
beforeAll(async () => {
  m = await createMerchant(server, { merchantName: "Northwind Coffee" });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const links = {
  success_url: "https://shop.example/thanks",
  fail_url: "https://shop.example/failed",
  return_url: "https://shop.example/cart",
};

async function expire(id: string): Promise<void> {
  await server.ctx.store.transaction(async (tx) => {
    await tx.db
      .updateTable("invoices")
      .set({ expires_at: new Date(Date.now() - 3_600_000).toISOString() })
      .where("id", "=", id)
      .execute();
  });
  const expiry = server.workers.loops.expiry;
  if (!expiry) throw new Error("no expiry loop");
  for (let i = 0; i < 10 && (await expiry.runOnce()) > 0; i += 1) {}
}

/** Builds an invoice in the named state through the same paths a payer and the workers take. */
const STATES: Record<string, (id: string) => Promise<void>> = {
  pending: async () => {},
  processing: async (id) => {
    await pay(server, m.apiKey, id, { confirmed: false });
  },
  // Partly paid: 20 of 49.9 received, the page asks for the remaining 29.9.
  partial: async (id) => {
    await pay(server, m.apiKey, id, { amount: "20", confirmed: false });
  },
  completed: async (id) => {
    await pay(server, m.apiKey, id, {});
  },
  failed: async (id) => {
    await pay(server, m.apiKey, id, { amount: "20" });
    await expire(id);
  },
  expired: async (id) => {
    await expire(id);
  },
  aml_check: async (id) => {
    await pay(server, m.apiKey, id, { amlFlag: true });
  },
  aml_block: async (id) => {
    await pay(server, m.apiKey, id, { amlFlag: true });
    const answer = await fetch(`${server.baseUrl}/pay/${id}/sandbox/block`, { method: "POST", redirect: "manual" });
    expect(answer.status).toBe(303);
  },
};

describe("screenshots of every state", () => {
  it("renders each state at 390x844 and 1280x900", async () => {
    const update = process.env.UPDATE_SCREENSHOTS === "1";
    if (update) await mkdir(OUT, { recursive: true });
    for (const [state, reach] of Object.entries(STATES)) {
      const invoice = await createInvoice(server, m.apiKey, {
        currency: "USDT",
        amount: "49.9",
        order_no: "A-1042",
        description: "2 × House blend, 1 kg",
        ...links,
      });
      await reach(invoice.id);
      for (const size of SIZES) {
        const context = await browser.newContext({
          viewport: { width: size.width, height: size.height },
          locale: "en-US",
        });
        try {
          const page = await context.newPage();
          await page.goto(invoice.invoice_url);
          const shown = state === "partial" ? "[data-partial]" : `[data-status="${state}"]`;
          await page.locator(shown).waitFor({ timeout: 30_000 });
          if (state === "pending" || state === "partial") {
            await expect
              .poll(() =>
                page.locator("img.qr").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
              )
              .toBeGreaterThan(0);
          }
          const png = await page.screenshot({ fullPage: true });
          expect(png.byteLength).toBeGreaterThan(1000);
          if (update) await writeFile(new URL(`${state}-${size.name}.png`, OUT), png);
        } finally {
          await context.close();
        }
      }
    }
  });

  it("renders a partial payment made from the sandbox buttons without JavaScript", async () => {
    const update = process.env.UPDATE_SCREENSHOTS === "1";
    const invoice = await createInvoice(server, m.apiKey, {
      currency: "USDT",
      amount: "49.9",
      order_no: "A-1043",
      description: "2 × House blend, 1 kg",
      ...links,
    });
    for (const size of SIZES) {
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
        locale: "en-US",
        javaScriptEnabled: false,
      });
      try {
        const page = await context.newPage();
        await page.goto(invoice.invoice_url);
        // Underpaid once (half of 49.9), from the plain form; the page comes back from the 303.
        if (size === SIZES[0]) await page.getByRole("button", { name: "Underpay" }).click();
        await page.locator("[data-partial]").waitFor({ timeout: 10_000 });
        const png = await page.screenshot({ fullPage: true });
        expect(png.byteLength).toBeGreaterThan(1000);
        if (update) await writeFile(new URL(`partial-no-javascript-${size.name}.png`, OUT), png);
      } finally {
        await context.close();
      }
    }
  });

  it("renders an invoice payable on two networks, on the one the payer chose (product §23)", async () => {
    const update = process.env.UPDATE_SCREENSHOTS === "1";
    // Runs last: from here on USDT has a second entry, on Base.
    const put = await fetch(`${server.baseUrl}/admin/v1/currencies/USDT_BASE`, {
      method: "PUT",
      headers: { authorization: `Bearer ${server.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify({
        ticker: "USDT",
        internalTicker: "USDT_BASE",
        fullName: "Tether USD",
        network: "base",
        contractAddress: "0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2",
        type: "stablecoin",
        icon: "/icons/usdt.svg",
        iconDark: "/icons/usdt-dark.svg",
        decimals: 6,
        networkFee: "0.5",
        withdrawalMin: "10",
        withdrawalMax: "100000",
        rateUsd: "1",
      }),
    });
    expect(put.status).toBe(200);
    const invoice = await createInvoice(server, m.apiKey, {
      currency: "USDT",
      amount: "49.9",
      order_no: "A-1044",
      description: "2 × House blend, 1 kg",
      ...links,
    });
    for (const size of SIZES) {
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
        locale: "en-US",
      });
      try {
        const page = await context.newPage();
        await page.goto(invoice.invoice_url);
        // The payer picks Base from the page's own link; its QR code, chain and warning follow.
        await page.locator('a[data-network="base"]').click();
        await page.locator('a[data-network="ethereum"]').waitFor({ timeout: 30_000 });
        await expect
          .poll(() =>
            page.locator("img.qr").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth),
          )
          .toBeGreaterThan(0);
        expect(await page.locator(".warning").textContent()).toContain("base");
        const png = await page.screenshot({ fullPage: true });
        expect(png.byteLength).toBeGreaterThan(1000);
        if (update) await writeFile(new URL(`pending-two-networks-${size.name}.png`, OUT), png);
      } finally {
        await context.close();
      }
    }
  });
});
